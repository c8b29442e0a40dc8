import re
out=[]; seen=set()
import sys
for line in open(sys.argv[1] if len(sys.argv) > 1 else 'out.txt'):
    if line.startswith('=== '):
        out.append('# ipvsadm '+line[4:].strip()); seen=set(); continue
    kind=line[:7]
    if kind not in ('sendmsg','recvmsg'): continue
    if kind=='recvmsg' and ('MSG_PEEK' in line or 'error=' in line): continue
    for flags,seq,data in re.findall(r'nlmsg_type=0x1c[^}]*?nlmsg_flags=([^,]+), nlmsg_seq=(\d+)[^}]*\}, "([^"]*)"',line):
        key=(kind,seq,data)
        if key in seen: continue
        seen.add(key)
        flags=flags.replace('NLM_F_','').replace('|0','')
        out.append(('request ' if kind=='sendmsg' else 'reply   ')+flags+' '+data.replace('\\x',''))
print('\n'.join(out))
