"""SSH stand-ins for switch OSes that cannot run here (SONiC, Cumulus NVUE, Arista EOS), and for the replies of an
FRR white-box a test needs to choose.

Not mocks of our code: each is a small program that keeps device state in files and implements the
device's transactional commands with their documented behaviour and output shapes, served by a real
OpenSSH sshd (`ForceCommand`) in a test network namespace and driven through the same netmiko code
path `fabric plan/apply` uses in production:

* `sonic` — a bash shell with `config checkpoint|apply-patch|rollback|save|list-checkpoints`,
  `show runningconfiguration all`, `vtysh -c 'show bgp summary json'`, `sudo`; `apply-patch` refuses a
  result that fails SONiC's YANG models when the device names the checker (`yang.json`).
* `nvue` — a bash shell with `nv config patch|diff|apply [rev] [--confirm T]|detach|revision|show`,
  `nv config apply --confirm-yes|--confirm-no|--confirm-status`, `nv show … -o json`; an unconfirmed
  apply reverts to the previous revision when its timer expires (a detached timer process).
* `eos` — an EOS-like CLI (`>`/`#` prompts, `configure session` starting from the running-config with
  lines merged by mode, `rollback clean-config`, `show session-config diffs`, `commit`, `commit timer`,
  `abort`, `configure session X commit|abort`, `show configuration sessions detail`,
  `show ip bgp summary | json`); unknown commands and an MTU above 9214 are `% Invalid input`; a timed
  commit not confirmed in time is rolled back.
* `frr` — what an FRR white-box's plan reads (tests.standins.frr): `vtysh` answers from `running.conf`, the kept
  setup scripts under its own /etc/frr, `ip`/`tc`/`dcb` replies the test planted (else the real tools).

BGP peers are simulated by `peers.json` in the device directory: the local ASN each peer expects. The
tests seed each stand-in from the realistic running configs in tests/fixtures/running/<nos>/.
"""
