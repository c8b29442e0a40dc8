#!/bin/bash
# The idle cost of each daemon (-C) holding 20 SSL_GET checks whose
# delay_loop is long (no probe in the window), by what a SCHED_IDLE
# spinner is left. Run in the guest, after make bench-lvs built bin/uml:
#   integration/uml/run.sh -t 300 -- $PWD/scripts/idle-cost.sh
ROOT=$(cd "$(dirname "$0")/.." && pwd)
D=/tmp/idle; mkdir -p $D
{
echo "virtual_server 10.1.0.1 443 {"
echo "  delay_loop 100000"; echo "  lvs_sched rr"; echo "  lvs_method DR"; echo "  protocol TCP"
for i in $(seq 1 20); do
  echo "  real_server 127.0.1.$i 443 { weight 1"
  echo "    SSL_GET { url { path /healthz status_code 200 } connect_timeout 2 retry 1 delay_before_retry 1 } }"
done
echo "}"
} > $D/k.conf
DIRECTORD_TEST_SPINNER=$D/s GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 chrt --idle 0 "$ROOT"/bin/uml/integration-lvs.test &
S=$!
sleep 2
r() { od -An -tu8 $D/s | tr -d ' '; }
a=$(r); sleep 10; b=$(r)
idle=$(( (b-a)/10 ))
echo "spinner idle: $idle rounds/s"
for who in directord keepalived directord; do
  if [ $who = directord ]; then
    "$ROOT"/bin/uml/directord -C -n -l -f $D/k.conf > $D/log.$who 2>&1 &
  else
    keepalived -C -n -l -f $D/k.conf -p $D/k.pid -c $D/c.pid > $D/log.$who 2>&1 &
  fi
  P=$!
  sleep 5
  c=$(r); sleep 30; d=$(r)
  rate=$(( (d-c)/30 ))
  echo "$who: spinner $rate rounds/s: the rest used $(( (idle-rate)*1000/idle )) per mille of the CPU"
  kill $P; wait $P 2>/dev/null
  sleep 3
done
kill $S
