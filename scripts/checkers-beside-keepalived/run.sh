#!/bin/bash
# What keepalived 2.2.7's UDP_CHECK, DNS_CHECK and SMTP_CHECK send, and
# how they judge, against listeners on loopback. keepalived's checker
# needs IPVS: run it in the User-Mode Linux guest, from the repository:
#
#   integration/uml/run.sh -t 60 -- scripts/checkers-beside-keepalived/run.sh
#
# It prints what the servers received (the UDP payload, the DNS queries
# in hex, the SMTP lines) and keepalived's verdicts. Its output is kept in
# bin/ (the guest's /tmp vanishes with it). A manual measurement, not a
# test: its waits are sleeps.
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$here/../.." && pwd)/bin/checkers-beside-keepalived
mkdir -p "$out"
rm -f "$out/received.txt"
python3 "$here/servers.py" "$out/received.txt" &
srv=$!
sleep 1
keepalived -C -n -l -D -f "$here/keepalived.conf" -p /tmp/kp.pid -c /tmp/kc.pid >"$out/keepalived.log" 2>&1 &
ka=$!
sleep 8
kill "$ka"; wait "$ka"
kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null
cat "$out/received.txt"
grep -i "fail\|succe\|remov\|error" "$out/keepalived.log" | sed 's/^.*: //'
