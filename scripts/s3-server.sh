#!/usr/bin/env bash
# A real S3 server for the tests: Ceph's radosgw on a one-node RADOS cluster
# (1 monitor, no manager, 1 OSD), every listener on 127.0.0.1 only.
#
#   scripts/s3-server.sh start DIR   start in DIR (created; must be empty or
#                                    absent), wait until S3 answers, create
#                                    the user; prints the settings as
#                                    shell assignments (same as `env`)
#   scripts/s3-server.sh env DIR     prints AWS_ENDPOINT_URL, AWS_REGION,
#                                    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY
#   scripts/s3-server.sh bucket DIR NAME   creates a bucket
#   scripts/s3-server.sh stop DIR    stops the daemons by their pid files
#
# The packages come from scripts/install-deps.sh; this script installs
# nothing. Ports are picked free at start (S3_PORT, MON_PORT override).
# OBJECTSTORE=memstore keeps the data in RAM (for tmpfs, which bluestore's
# O_DIRECT cannot use); the default is bluestore in a sparse file.
set -euo pipefail

die() { echo "s3-server: $*" >&2; exit 1; }

cmd=${1:-}
dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || die "usage: $0 start|stop|env|bucket DIR [NAME]"

access_key=${S3_ACCESS_KEY:-tfsaccesskey}
secret_key=${S3_SECRET_KEY:-tfssecretkey}
region=us-east-1

# A TCP port on 127.0.0.1 nobody listens on (and its neighbour for the
# monitor's second protocol when pair=1).
free_port() {
	local pair=${1:-0}
	python3 - "$pair" <<'EOF'
import socket, sys, random
pair = sys.argv[1] == "1"
for _ in range(200):
    p = random.randint(20000, 60000)
    socks = []
    try:
        for q in ([p, p + 1] if pair else [p]):
            s = socket.socket()
            s.bind(("127.0.0.1", q))
            socks.append(s)
    except OSError:
        for s in socks:
            s.close()
        continue
    for s in socks:
        s.close()
    print(p)
    sys.exit(0)
sys.exit(1)
EOF
}

print_env() {
	local port
	port=$(cat "$dir/s3.port") || die "'$dir': no server there"
	echo "AWS_ENDPOINT_URL=http://127.0.0.1:$port"
	echo "AWS_REGION=$region"
	echo "AWS_ACCESS_KEY_ID=$(cat "$dir/s3.access")"
	echo "AWS_SECRET_ACCESS_KEY=$(cat "$dir/s3.secret")"
}

# Sends SIGTERM to the daemon of a pid file if it still is one of ours,
# then SIGKILL after 8 s. Zombies count as gone.
stop_pidfile() {
	local f=$1 pid comm state i
	[ -f "$f" ] || return 0
	pid=$(cat "$f" 2>/dev/null) || return 0
	[ -n "$pid" ] || return 0
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 0
	case "$comm" in
	radosgw|ceph-osd|ceph-mon) ;;
	*) return 0 ;;
	esac
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 80); do
		state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 0
		[ "$state" = Z ] && return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

do_stop() {
	[ -d "$dir/run" ] || return 0
	# All three at once: radosgw alone takes ~5 s to shut down.
	stop_pidfile "$dir/run/client.rgw.pid" &
	stop_pidfile "$dir/run/osd.0.pid" &
	stop_pidfile "$dir/run/mon.a.pid" &
	wait
}

do_start() {
	local fsid conf port mon_port uuid osd_id i store
	if [ -e "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ]; then
		die "'$dir': not empty"
	fi
	for t in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph-authtool ceph uuidgen curl; do
		command -v "$t" >/dev/null 2>&1 ||
			die "'$t' is missing: run scripts/install-deps.sh"
	done
	mkdir -p "$dir"/{run,log,mon,osd,rgw}
	dir=$(cd "$dir" && pwd)
	conf=$dir/ceph.conf
	fsid=$(uuidgen)
	port=${S3_PORT:-$(free_port 0)} || die "no free port"
	mon_port=${MON_PORT:-$(free_port 1)} || die "no free port"
	store=${OBJECTSTORE:-bluestore}
	local mon_addr="[v2:127.0.0.1:$((mon_port + 1)),v1:127.0.0.1:$mon_port]"
	cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = $mon_addr
public addr = 127.0.0.1
cluster addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
run dir = $dir/run
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
mon cluster log file = $dir/log/cluster.log
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon max pg per osd = 1000
osd crush chooseleaf type = 0
mon warn on pool no redundancy = false
mon data avail warn = 1
mon data avail crit = 0
paxos propose interval = 0.05
paxos min wait = 0.01
ms bind port min = 20000
ms bind port max = 60000
[mon]
mon data = $dir/mon/\$name
[osd]
osd data = $dir/osd/\$name
osd objectstore = $store
bluestore block create = true
bluestore block size = 10737418240
bluestore block db create = false
bluestore block wal create = false
bluestore fsck on mkfs = false
bluestore fsck on mount = false
memstore device bytes = 2147483648
osd memory target = 1073741824
[client.rgw]
rgw data = $dir/rgw
rgw frontends = beast endpoint=127.0.0.1:$port tcp_nodelay=1
ms mon client mode = crc secure
EOF
	echo "$port" >"$dir/s3.port"
	echo "$access_key" >"$dir/s3.access"
	echo "$secret_key" >"$dir/s3.secret"
	chmod 600 "$dir/s3.secret"
	# From here on a failure stops whatever already runs.
	trap 'echo "s3-server: start failed at line $LINENO (see $dir/log)" >&2; do_stop' ERR
	local quiet=("--conf" "$conf")
	monmaptool --create --fsid "$fsid" --addv a "$mon_addr" "$dir/monmap" >/dev/null
	ceph-authtool --create-keyring "$dir/mon.keyring" --gen-key -n mon. \
		--cap mon 'allow *' >/dev/null
	ceph-mon "${quiet[@]}" -i a --mkfs --monmap "$dir/monmap" \
		--keyring "$dir/mon.keyring" >/dev/null 2>&1
	ceph-mon "${quiet[@]}" -i a 2>>"$dir/log/mon-start.log"
	uuid=$(uuidgen)
	osd_id=$(timeout 30 ceph "${quiet[@]}" osd new "$uuid")
	mkdir -p "$dir/osd/osd.$osd_id"
	ceph-osd "${quiet[@]}" -i "$osd_id" --mkfs --osd-uuid "$uuid" >/dev/null 2>&1
	ceph-osd "${quiet[@]}" -i "$osd_id" 2>>"$dir/log/osd-start.log"
	for i in $(seq 120); do
		if timeout 10 ceph "${quiet[@]}" osd stat -f json 2>/dev/null |
			grep -q '"num_up_osds":1'; then
			break
		fi
		[ "$i" -lt 120 ] || die "the OSD did not come up (see $dir/log)"
		sleep 0.25
	done
	radosgw "${quiet[@]}" -n client.rgw 2>>"$dir/log/rgw-start.log"
	for i in $(seq 240); do
		if curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$port/"; then
			break
		fi
		[ "$i" -lt 240 ] || die "radosgw did not answer (see $dir/log)"
		sleep 0.25
	done
	timeout 60 radosgw-admin "${quiet[@]}" user create --uid=tfs \
		--display-name=tfs --access-key="$access_key" \
		--secret-key="$secret_key" >/dev/null 2>&1 ||
		die "cannot create the S3 user (see $dir/log)"
	trap - ERR
	print_env
}

do_bucket() {
	local name=$1 port code
	port=$(cat "$dir/s3.port") || die "'$dir': no server there"
	code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time 30 \
		--aws-sigv4 "aws:amz:$region:s3" \
		--user "$(cat "$dir/s3.access"):$(cat "$dir/s3.secret")" \
		-H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
		-X PUT "http://127.0.0.1:$port/$name")
	[ "$code" = 200 ] || die "cannot create bucket '$name': HTTP $code"
}

case "$cmd" in
start) do_start ;;
stop) do_stop ;;
env) print_env ;;
bucket) [ -n "${3:-}" ] || die "usage: $0 bucket DIR NAME"; do_bucket "$3" ;;
*) die "unknown command '$cmd'" ;;
esac
