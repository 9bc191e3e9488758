# roce-fabric pooled rails: which devices this pod was granted, and which rail each one is.
sys="${ROCE_FABRIC_SYSFS:-/sys}"
run="${ROCE_FABRIC_RUN:-/var/run/roce-fabric}"
map="${ROCE_FABRIC_RAIL_MAP:-/etc/roce-fabric/pod-rails}"
prefix="${ROCE_FABRIC_IFPREFIX:-rail}"
say() { echo "roce-pod: $*" >&2; }
must() { "$@" || { say "failed: $*"; exit 1; }; }
[ -r "$map" ] || { say "no rail map $map on this node (fabric host apply --persist installs it)"; exit 1; }
granted=$(printenv "$ROCE_FABRIC_DEVICES_VAR") ||
  { say "no $ROCE_FABRIC_DEVICES_VAR: the device plugin granted this container nothing"; exit 1; }
want=$(awk '/^[0-9a-f]/ {n++} END {print n + 0}' "$map")
found=""; seen=" "; n=0
for pci in $(printf '%s' "$granted" | tr ',' ' '); do
  case "$pci" in
    [0-9a-f][0-9a-f][0-9a-f][0-9a-f]:[0-9a-f][0-9a-f]:[0-9a-f][0-9a-f].[0-7]) ;;
    *) say "granted device '$pci' is not a PCI address"; exit 1 ;;
  esac
  d="$sys/bus/pci/devices/$pci"
  nic=$pci
  if [ -L "$d/physfn" ]; then nic=$(readlink "$d/physfn"); nic=${nic##*/}; fi
  line=$(awk -v nic="$nic" '$1 == nic {print $2, $3, $4, $5, $6, $7, $8; exit}' "$map")
  set -- $line
  [ $# -eq 7 ] || { say "$pci (NIC $nic) is on no rail of $map"; exit 1; }
  rail=$1; vlan=$2; addr=$3; subnet=$4; gw=$5; table=$6; prio=$7
  case "$seen" in
    *" $rail "*) say "two granted devices on rail $rail (one is $pci): one device per NIC only"; exit 1 ;;
  esac
  seen="$seen$rail "
  ifname=""; for x in "$d/net/"*; do [ -e "$x" ] && ifname=${x##*/}; done
  dev=""; for x in "$d/infiniband/"*; do [ -e "$x" ] && dev=${x##*/}; done
  [ -n "$ifname" ] && [ -n "$dev" ] || { say "$pci: no interface or RDMA device of it in this pod"; exit 1; }
  # The attached interface keeps its name: sriov-cni and host-device look it up by that name to give the device
  # back when the pod goes (CNI DEL; a VLAN on top goes with it).
  rif=$ifname
  if [ "$vlan" -gt 0 ]; then
    rif="$prefix$rail"
    must ip link set dev "$ifname" up
    must ip link add link "$ifname" name "$rif" type vlan id "$vlan"
  fi
  must ip link set dev "$rif" up
  must ip addr add "$addr" dev "$rif"
  must ip route add "$subnet" dev "$rif" src "${addr%/*}" table "$table"
  must ip route add default via "$gw" dev "$rif" table "$table"
  must ip rule add from "${addr%/*}" lookup "$table" priority "$prio"
  found="$found$rail $rif $dev
"
  n=$((n + 1))
  tag=""; [ "$vlan" -gt 0 ] && tag=", VLAN $vlan"
  say "$pci (NIC $nic) is rail $rail: $rif $addr via $gw$tag ($dev)"
done
[ "$n" -eq "$want" ] || { say "granted $n devices, one per rail wanted on the node's $want rails"; exit 1; }
mkdir -p "$run"
printf '%s' "$found" | sort -n | awk '{print $2, $3, $1}' > "$run/rails"
