#!/bin/sh
S="strace -f -e trace=sendmsg,recvmsg -xx -s 2048"
ip link add dummy0 type veth peer name dummy1 2>/dev/null; ip link set dummy0 up
run() { echo "=== $*"; $S ipvsadm "$@" 2>&1 | grep -v '^+++\|resumed\|NLMSG_DONE' ; }
run -A -t 192.0.2.1:80 -s rr
run -a -t 192.0.2.1:80 -r 192.0.2.10:8080 -g -w 3
run -e -t 192.0.2.1:80 -r 192.0.2.10:80 -g -w 5 -x 100 -y 10
run -a -t 192.0.2.1:80 -r 192.0.2.11:8080 -i
run -a -t 192.0.2.1:80 -r 192.0.2.12:8080 -m -w 0
run -a -t 192.0.2.1:80 -r 192.0.2.13 -i --tun-type gue --tun-port 6080 --tun-nocsum
run -A -t 192.0.2.3:443 -s wrr -p
run -A -u [2001:db8::1]:53 -s wlc -p 300 -M 64
run -a -u [2001:db8::1]:53 -r [2001:db8::10]:53 -g -w 1
run -A -f 7 -s sh -b sh-fallback,sh-port
run -A -f 8 -6 -s mh -o
run -A --sctp-service 192.0.2.2:9 -s rr -p 60 -M 255.255.255.0 --pe sip
run -E -t 192.0.2.1:80 -s wlc
run -Ln
run -Ln --stats
run --set 900 120 300
run -L --timeout
run --start-daemon master --mcast-interface dummy0 --syncid 5
run --start-daemon backup --mcast-interface dummy0 --syncid 7 --sync-maxlen 1400 --mcast-group 239.1.2.3 --mcast-port 8900 --mcast-ttl 2
run -L --daemon
run --stop-daemon backup
run -d -t 192.0.2.1:80 -r 192.0.2.10:8080
run -D -t 192.0.2.1:80
run -Z
run -C
cat /proc/net/ip_vs
