"""Host provisioning: the single-host agent (netlink, procfs, sysfs, mlnx_qos), boot-time
persistence files and the fleet rollout through ansible-runner."""
