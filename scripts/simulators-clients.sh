#!/usr/bin/env bash
# Drives the Redfish simulator (bmc/redfish/redfishtest) with independent
# clients: DMTF's redfishtool and OpenStack's sushy (the library Ironic uses).
# Power on/off and every reset type, boot override Once/Continuous/mode,
# sessions and basic auth, virtual media, a wrong password, the protocol
# documents, accounts (add, set password, role, disable, delete). Then the
# IPMI simulator (bmc/ipmi/ipmitest) with ipmitool: power
# status/on/off/cycle/reset/soft, boot device once/persistent/EFI and its
# clearing by the next boot and by the one-time flag timeout, mc info, session
# info, cipher suites 3 and 17, a wrong password and an unknown user, users
# (name, password, channel access, enable/disable, password test), and the
# silence after a BMC cold reset. It fails on the first error.
#
# Needs the Debian packages redfishtool, python3-sushy and ipmitool (installed
# when run as root with apt-get). sushy is imported by /usr/bin/python3, the
# Debian interpreter the package installs into.
set -euo pipefail
cd "$(dirname "$0")/.."

py=/usr/bin/python3
if ! command -v redfishtool >/dev/null 2>&1 || ! "$py" -c 'import sushy' 2>/dev/null || ! command -v ipmitool >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== installing redfishtool python3-sushy ipmitool"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq redfishtool python3-sushy ipmitool >/dev/null
  else
    echo "simulators-clients: needs redfishtool, python3-sushy and ipmitool (apt-get install redfishtool python3-sushy ipmitool)" >&2
    exit 1
  fi
fi

tmp=$(mktemp -d)
sim_pids=()
cleanup() {
  for p in "${sim_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
# Each simulator is built inside its own module (they are separate Go
# modules, with or without a go.work at the root).
(cd bmc/redfish && go build -o "$tmp/redfishsim" ./redfishtest/internal/redfishsim)
(cd bmc/ipmi && go build -o "$tmp/ipmisim" ./ipmitest/internal/ipmisim)

# start_sim ARGS...: starts a simulator, sets $url and $hostport. Its state
# change lines go to $tmp/sim-N.log.
n=0
start_sim() {
  n=$((n + 1))
  exec {fd}< <(exec "$tmp/redfishsim" "$@")
  sim_pids+=("$!")
  read -r url <&"$fd"
  cat <&"$fd" >"$tmp/sim-$n.log" &
  hostport=${url#http://}
  echo "== simulator $n ($*): $url"
}

fail() { echo "FAIL: $*" >&2; exit 1; }

# rt ARGS...: redfishtool against the current simulator, quiet on success.
rt() { redfishtool -r "$hostport" -S Never -T 5 "$@"; }

# prop JSON PATH: a property (dotted path) of redfishtool's JSON output.
prop() {
  "$py" -c 'import json,sys
v=json.loads(sys.argv[1])
for k in sys.argv[2].split("."): v=v[k]
print(v)' "$1" "$2"
}

expect() { # expect WHAT GOT WANT
  [ "$2" = "$3" ] || fail "$1: got $2, want $3"
  echo "ok   $1 = $3"
}

redfishtool_suite() { # redfishtool_suite AUTH (Session or Basic)
  local a=(-A "$1" -u admin -p redfishtest-secret)
  local sys=(Systems -1)
  for doc in versions root odata metadata; do
    rt "${a[@]}" "$doc" >/dev/null || fail "redfishtool $doc"
  done
  echo "ok   redfishtool versions, root, odata, metadata"
  rt "${a[@]}" Chassis -1 >/dev/null || fail "redfishtool Chassis"
  for step in On:On ForceOff:Off On:On GracefulShutdown:Off PowerCycle:On ForceRestart:On \
    GracefulRestart:On PushPowerButton:Off PushPowerButton:On Nmi:On ForceOff:Off; do
    rt "${a[@]}" "${sys[@]}" reset "${step%%:*}" >/dev/null || fail "redfishtool reset ${step%%:*}"
    expect "redfishtool($1) reset ${step%%:*}: PowerState" \
      "$(prop "$(rt "${a[@]}" "${sys[@]}" -P PowerState)" PowerState)" "${step##*:}"
  done
  for ov in Once:Pxe Continuous:Hdd Once:Cd Disabled:None; do
    rt "${a[@]}" "${sys[@]}" setBootOverride "${ov%%:*}" "${ov##*:}" >/dev/null || fail "redfishtool setBootOverride $ov"
    boot=$(rt "${a[@]}" "${sys[@]}" -P Boot)
    if [ "${ov%%:*}" = Disabled ]; then
      # redfishtool sends only the Enabled property for Disabled; the BMC
      # keeps the target, as real ones do.
      expect "redfishtool($1) boot override Disabled" "$(prop "$boot" Boot.BootSourceOverrideEnabled)" Disabled
      continue
    fi
    expect "redfishtool($1) boot override $ov" \
      "$(prop "$boot" Boot.BootSourceOverrideEnabled):$(prop "$boot" Boot.BootSourceOverrideTarget)" "$ov"
  done
  for mode in Legacy UEFI; do
    rt "${a[@]}" "${sys[@]}" patch "{\"Boot\": {\"BootSourceOverrideMode\": \"$mode\"}}" >/dev/null || fail "redfishtool patch mode $mode"
    expect "redfishtool($1) boot mode" "$(prop "$(rt "${a[@]}" "${sys[@]}" -P Boot)" Boot.BootSourceOverrideMode)" "$mode"
  done
  local vm=/redfish/v1/Managers/BMC/VirtualMedia/CD
  rt "${a[@]}" raw POST "$vm/Actions/VirtualMedia.InsertMedia" -d '{"Image": "http://192.0.2.1/boot.iso", "Inserted": true}' >/dev/null ||
    fail "redfishtool InsertMedia"
  expect "redfishtool($1) virtual media inserted" "$(prop "$(rt "${a[@]}" raw GET "$vm")" Image)" "http://192.0.2.1/boot.iso"
  rt "${a[@]}" raw POST "$vm/Actions/VirtualMedia.EjectMedia" -d '{}' >/dev/null || fail "redfishtool EjectMedia"
  expect "redfishtool($1) virtual media ejected" "$(prop "$(rt "${a[@]}" raw GET "$vm")" Inserted)" "False"
  if rt -A "$1" -u admin -p wrong "${sys[@]}" >/dev/null 2>&1; then
    fail "redfishtool($1) with a wrong password succeeded"
  fi
  echo "ok   redfishtool($1) wrong password refused"
}

redfishtool_accounts() { # accounts through redfishtool's AccountService commands
  local a=(-A Session -u admin -p redfishtest-secret)
  local ops=(-A Basic -u ops)
  rt "${a[@]}" AccountService adduser ops Ops-pw-1234 Operator >/dev/null || fail "redfishtool adduser"
  rt "${ops[@]}" -p Ops-pw-1234 Systems >/dev/null || fail "redfishtool: the new user cannot log in"
  echo "ok   redfishtool adduser: the new user logs in"
  rt "${a[@]}" AccountService setpassword ops Ops-pw-5678 >/dev/null || fail "redfishtool setpassword"
  if rt "${ops[@]}" -p Ops-pw-1234 Systems >/dev/null 2>&1; then
    fail "redfishtool: the old password still logs in after setpassword"
  fi
  rt "${ops[@]}" -p Ops-pw-5678 Systems >/dev/null || fail "redfishtool: the new password does not log in"
  echo "ok   redfishtool setpassword: the new password logs in, the old one is refused"
  rt "${a[@]}" AccountService useradmin ops setRoleId ReadOnly >/dev/null || fail "redfishtool useradmin setRoleId"
  expect "redfishtool useradmin setRoleId" "$(prop "$(rt "${a[@]}" AccountService Accounts -i2)" RoleId)" ReadOnly
  rt "${a[@]}" AccountService useradmin ops disable >/dev/null || fail "redfishtool useradmin disable"
  if rt "${ops[@]}" -p Ops-pw-5678 Systems >/dev/null 2>&1; then
    fail "redfishtool: a disabled user logs in"
  fi
  echo "ok   redfishtool useradmin disable: refused"
  rt "${a[@]}" AccountService deleteuser ops >/dev/null || fail "redfishtool deleteuser"
  if rt "${a[@]}" AccountService Accounts -i2 >/dev/null 2>&1; then
    fail "redfishtool deleteuser: account 2 is still there"
  fi
  echo "ok   redfishtool deleteuser: the account is gone"
}

sushy_suite() { # sushy_suite URL AUTH (session, basic) MEDIA (manager, system)
  "$py" - "$@" <<'EOF'
import sys
import sushy
from sushy import auth, exceptions

url, kind, media = sys.argv[1], sys.argv[2], sys.argv[3]
def connect(password):
    a = {"session": auth.SessionAuth, "basic": auth.BasicAuth}[kind](username="admin", password=password)
    return sushy.Sushy(url + "/redfish/v1", auth=a)

def expect(what, got, want):
    if got != want:
        sys.exit("FAIL: sushy(%s) %s: got %r, want %r" % (kind, what, got, want))
    print("ok   sushy(%s) %s = %s" % (kind, what, want))

try:
    connect("wrong").get_system_collection().get_members()
    sys.exit("FAIL: sushy(%s) with a wrong password succeeded" % kind)
except exceptions.AccessError:
    print("ok   sushy(%s) wrong password refused" % kind)

s = connect("redfishtest-secret")
system = s.get_system()  # the only system
R = sushy.ResetType
steps = [(R.ON, "on"), (R.FORCE_OFF, "off"), (R.POWER_CYCLE, "on"), (R.FORCE_RESTART, "on"),
         (R.GRACEFUL_RESTART, "on"), (R.GRACEFUL_SHUTDOWN, "off"), (R.PUSH_POWER_BUTTON, "on"), (R.NMI, "on"),
         (R.FORCE_OFF, "off")]
for rt, want in steps:
    system.reset_system(rt)
    system.refresh()
    expect("reset %s: power" % rt.value, system.power_state.value.lower(), want)

B = sushy.BootSource
E = sushy.BootSourceOverrideEnabled
M = sushy.BootSourceOverrideMode
for target, enabled, mode in [(B.PXE, E.ONCE, M.UEFI), (B.HDD, E.CONTINUOUS, M.LEGACY), (B.CD, E.ONCE, M.UEFI),
                              (B.NONE, E.DISABLED, M.UEFI)]:
    system.set_system_boot_options(target, enabled=enabled, mode=mode)
    system.refresh()
    expect("boot override", (system.boot.target, system.boot.enabled, system.boot.mode), (target, enabled, mode))

# A one-time override is consumed by the next boot.
system.set_system_boot_options(B.PXE, enabled=E.ONCE)
system.reset_system(R.ON)
system.refresh()
expect("Once after a boot", system.boot.enabled, E.DISABLED)
system.reset_system(R.FORCE_OFF)

if media == "manager":
    vms = s.get_manager().virtual_media
elif hasattr(system, "virtual_media"):
    vms = system.virtual_media
else:
    # sushy before 4.5 knows virtual media only under a Manager; the
    # resource class is the same.
    from sushy.resources.manager.virtual_media import VirtualMediaCollection
    vms = VirtualMediaCollection(s._conn, system.path + "/VirtualMedia", redfish_version=s.redfish_version)
vm = vms.get_member(vms.members_identities[0])
vm.insert_media("http://192.0.2.1/boot.iso", inserted=True, write_protected=True)
vm.refresh()
expect("virtual media inserted", (vm.image, vm.inserted), ("http://192.0.2.1/boot.iso", True))
vm.eject_media()
vm.refresh()
expect("virtual media ejected", vm.inserted, False)

expect("chassis", [c.identity for c in s.get_chassis_collection().get_members()], ["1"])
if kind == "session":
    ss = s.get_session_service()
    expect("SessionTimeout >= 30", ss.session_timeout >= 30, True)
    expect("sessions listed", len(ss.sessions.get_members()) >= 1, True)
    sess = ss.sessions.get_members()[0]
    expect("session read back", bool(sess.username), True)
EOF
}

start_sim -sessions body -media manager
redfishtool_suite Session
redfishtool_suite Basic
redfishtool_accounts
# A session across calls: login, use its token, list, logout.
login=$(rt -A Session -u admin -p redfishtest-secret SessionService login) || fail "redfishtool login"
token=$(prop "$login" X-Auth-Token)
loc=$(prop "$login" SessionLocation)
expect "redfishtool with the session token: PowerState" \
  "$(prop "$(rt -A Session -t "$token" Systems -1 -P PowerState)" PowerState)" "Off"
rt -A Session -t "$token" SessionService Sessions list >/dev/null || fail "redfishtool Sessions list"
expect "redfishtool session read back" "$(prop "$(rt -A Session -t "$token" raw GET "$loc")" UserName)" "admin"
rt -A Session -t "$token" SessionService logout -l "$loc" >/dev/null || fail "redfishtool logout"
if rt -A Session -t "$token" Systems -1 >/dev/null 2>&1; then
  fail "redfishtool: the logged-out token still works"
fi
echo "ok   redfishtool session login, token, list, read back, logout"
sushy_suite "$url" session manager
sushy_suite "$url" basic manager

start_sim -sessions none -media system
rt -A Basic -u admin -p redfishtest-secret Systems -1 reset On >/dev/null || fail "redfishtool basic-only reset"
expect "redfishtool(basic-only BMC) PowerState" \
  "$(prop "$(rt -A Basic -u admin -p redfishtest-secret Systems -1 -P PowerState)" PowerState)" "On"
sushy_suite "$url" basic system

start_sim -sessions nocontent
sushy_suite "$url" session manager

# ---- IPMI: ipmitool against bmc/ipmi/ipmitest ----

# start_ipmisim ARGS...: starts the IPMI simulator, sets $ipmiport.
start_ipmisim() {
  n=$((n + 1))
  exec {fd}< <(exec "$tmp/ipmisim" "$@")
  sim_pids+=("$!")
  read -r ipmiport <&"$fd"
  echo "== IPMI simulator $n ($*): 127.0.0.1:$ipmiport"
}

ipmipass=tK4v9 # ipmitest.DefaultPassword
# it [-U USER] [-P PASSWORD] [-C SUITE] ARGS...: ipmitool against the current
# IPMI simulator; the password goes through the environment (-E), one retry
# of 1 s so that a refusal or silence shows at once.
it() {
  local user=admin pass=$ipmipass suite=3
  while :; do
    case $1 in
      -U) user=$2; shift 2 ;;
      -P) pass=$2; shift 2 ;;
      -C) suite=$2; shift 2 ;;
      *) break ;;
    esac
  done
  IPMITOOL_PASSWORD=$pass ipmitool -I lanplus -H 127.0.0.1 -p "$ipmiport" -U "$user" -E -C "$suite" -N 1 -R 1 "$@"
}

# has OUTPUT TEXT WHAT: fails unless OUTPUT contains TEXT.
has() {
  case $1 in
    *"$2"*) echo "ok   $3" ;;
    *) fail "$3: output lacks \"$2\": $1" ;;
  esac
}

# power_is STATE: chassis power status reads STATE (on or off).
power_is() { has "$(it chassis power status)" "Chassis Power is $1" "ipmitool power status: $1 ($2)"; }

# bootflags: boot parameter 5 as ipmitool shows it.
bootflags() { it chassis bootparam get 5 || fail "ipmitool chassis bootparam get 5"; }

start_ipmisim
for suite in 3 17; do
  has "$(it -C "$suite" chassis power status)" "Chassis Power is off" "ipmitool cipher suite $suite"
done
power_is off "initial"
for step in on:on off:off cycle:on reset:on soft:off; do
  it chassis power "${step%%:*}" >/dev/null || fail "ipmitool chassis power ${step%%:*}"
  power_is "${step##*:}" "after power ${step%%:*}"
done

it chassis bootdev pxe options=efiboot >/dev/null || fail "ipmitool chassis bootdev pxe options=efiboot"
flags=$(bootflags)
has "$flags" "Boot Flag Valid" "bootdev pxe once: valid"
has "$flags" "Options apply to only next boot" "bootdev pxe once: next boot only"
has "$flags" "BIOS EFI boot" "bootdev pxe options=efiboot: EFI"
has "$flags" "Force PXE" "bootdev pxe: device"
it chassis power on >/dev/null || fail "ipmitool chassis power on"
has "$(bootflags)" "Boot Flag Invalid" "a one-time boot device is consumed by the next boot"

it chassis bootdev disk options=persistent >/dev/null || fail "ipmitool chassis bootdev disk options=persistent"
flags=$(bootflags)
has "$flags" "Options apply to all future boots" "bootdev disk persistent"
has "$flags" "Force Boot from default Hard-Drive" "bootdev disk: device"
it chassis power cycle >/dev/null || fail "ipmitool chassis power cycle"
has "$(bootflags)" "Boot Flag Valid" "a persistent boot device survives a power cycle"

has "$(it mc info)" "IPMI Version              : 2.0" "ipmitool mc info: IPMI version 2.0"
session=$(it session info active) || fail "ipmitool session info active"
has "$session" "session type                  : IPMIv2/RMCP+" "ipmitool session info active"
has "$session" "privilege level               : ADMINISTRATOR" "ipmitool session info: privilege"

if out=$(it -P Zq7-wrong-Xw3 -v chassis power status 2>&1); then
  fail "ipmitool with a wrong password succeeded"
fi
has "$out" "RAKP 2 HMAC is invalid" "ipmitool wrong password refused (RAKP 2 HMAC)"
if out=$(it -U bmctest-nobody -v chassis power status 2>&1); then
  fail "ipmitool as an unknown user succeeded"
fi
has "$out" "unauthorized name" "ipmitool unknown user refused (RAKP 2 unauthorized name)"

# Users (ipmitest's user commands): ipmitool names, sets a password, gives
# channel access and enables user 3, logs in as it, changes the password
# (the old one is refused), disables it (refused), and tests the password.
it user set name 3 ops >/dev/null || fail "ipmitool user set name 3 ops"
it user set password 3 Ops-pw-1234 >/dev/null || fail "ipmitool user set password 3"
it channel setaccess 1 3 ipmi=on link=on privilege=4 >/dev/null || fail "ipmitool channel setaccess 1 3"
it user enable 3 >/dev/null || fail "ipmitool user enable 3"
has "$(it user list 1)" "ops              true    true       true       ADMINISTRATOR" "ipmitool user list 1: the new user"
has "$(it -U ops -P Ops-pw-1234 chassis power status)" "Chassis Power is" "ipmitool logs in as the new user"
it user set password 3 Ops-pw-5678 >/dev/null || fail "ipmitool user set password 3 (again)"
if it -U ops -P Ops-pw-1234 chassis power status >/dev/null 2>&1; then
  fail "ipmitool logged in with the old password after the change"
fi
echo "ok   ipmitool: the old password is refused after the change"
has "$(it -U ops -P Ops-pw-5678 chassis power status)" "Chassis Power is" "ipmitool logs in with the new password"
has "$(it user test 3 16 Ops-pw-5678)" "Success" "ipmitool user test: the password matches"
it user disable 3 >/dev/null || fail "ipmitool user disable 3"
if it -U ops -P Ops-pw-5678 chassis power status >/dev/null 2>&1; then
  fail "ipmitool logged in as a disabled user"
fi
echo "ok   ipmitool: a disabled user is refused"

# poll_until SECONDS WHAT CMD...: runs CMD until it succeeds, or fails after
# SECONDS.
poll_until() {
  local deadline=$((SECONDS + $1)) what=$2
  shift 2
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || fail "$what: not within the deadline"
    sleep 0.2
  done
  echo "ok   $what"
}

# Realistic timing, shortened: the one-time flag times out after 1 s without
# a Chassis Control command; a cold reset silences the BMC for 2 s.
start_ipmisim -realistic -power-delay 0 -boot-flag-timeout 1s -reset-downtime 2s
it chassis bootdev pxe >/dev/null || fail "ipmitool chassis bootdev pxe (realistic)"
flag_invalid() { bootflags | grep -q "Boot Flag Invalid"; }
poll_until 10 "a one-time boot device times out without a boot" flag_invalid
has "$(it mc reset cold)" "Sent cold reset command to MC" "ipmitool mc reset cold"
if it chassis power status >/dev/null 2>&1; then
  fail "the BMC answered right after a cold reset with a 2 s downtime"
fi
echo "ok   the BMC is silent right after a cold reset"
poll_until 15 "the BMC answers again after its downtime" it chassis power status

echo "== simulators-clients: all passed"
