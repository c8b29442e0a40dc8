# Listeners for run.sh: a UDP sink (5301), DNS servers answering NOERROR
# (5302) and NXDOMAIN (5304), SMTP servers with a one-line (2526) and a
# multi-line (2527) banner. Each logs what it received to argv[1].
import socket, threading, time, sys
out = open(sys.argv[1], 'w')
def log(*a):
    out.write(' '.join(str(x) for x in a) + '\n'); out.flush()
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 5301))
    while True:
        b, a = s.recvfrom(2048); log('UDP', repr(b))
def dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 5302))
    while True:
        b, a = s.recvfrom(2048); log('DNS', b.hex())
        s.sendto(b[:2] + bytes([0x84, 0x00]) + b[4:], a)
def nx():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('127.0.0.1', 5304))
    while True:
        b, a = s.recvfrom(2048); log('NX', b.hex())
        s.sendto(b[:2] + bytes([0x81, 0x03]) + b[4:], a)
def multi():
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(('127.0.0.1', 2527)); l.listen()
    while True:
        c, a = l.accept()
        try:
            c.sendall(b'220-mx ESMTP\r\n220 more\r\n')
            f = c.makefile('rb')
            line = f.readline(); log('MULTI', repr(line)); c.sendall(b'250 ok\r\n')
            line = f.readline(); log('MULTI', repr(line)); c.sendall(b'221 bye\r\n')
        except OSError as e:
            log('MULTI', 'closed by the checker:', e)
        c.close()
def smtp():
    l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(('127.0.0.1', 2526)); l.listen()
    while True:
        c, a = l.accept(); c.sendall(b'220 mx ESMTP\r\n')
        f = c.makefile('rb')
        line = f.readline(); log('SMTP', repr(line)); c.sendall(b'250 ok\r\n')
        line = f.readline(); log('SMTP', repr(line)); c.sendall(b'221 bye\r\n')
        c.close()
for t in (udp, dns, smtp, nx, multi):
    threading.Thread(target=t, daemon=True).start()
time.sleep(12)
