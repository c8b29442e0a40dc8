// Package bgp holds the end-to-end tests of directord's BGP speaker: the
// directord binary programs a real IPVS, announces its virtual server's
// address to Debian's FRR in a router namespace, and withdraws it before
// anything is taken away. They need the kernel's IPVS, so they skip on
// our hosts and run in the User-Mode Linux guest of make integration:
//
//	make integration UML_PACKAGES=./integration/bgp V=1
package bgp
