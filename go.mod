module github.com/directord/directord

go 1.26.0

require github.com/gopacket/gopacket v1.7.7
