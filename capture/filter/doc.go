// Package filter is kidscope's capture filter: a subset of tcpdump's filter
// language compiled to classic BPF by our own compiler, so that one program
// means the same in the kernel (a live capture attaches Program.Raw with
// SO_ATTACH_FILTER) and in userspace (Program.Match on the frames of a
// file).
//
// # The subset
//
// Primitives:
//
//	host H            IPv4 or IPv6 address; src host H, dst host H,
//	                  src or dst host H, src and dst host H;
//	                  "src H" / "dst H" as a shorthand for src/dst host
//	net N/LEN         IPv4 or IPv6 network; also "net 10", "net 10.1"
//	                  (8 bits per part given), "net N mask M" (IPv4);
//	                  src net, dst net
//	port P            src port P, dst port P, src or dst / src and dst
//	portrange A-B     the same directions; A > B is read as B-A
//	tcp, udp, ip, ip6 alone, or before host/net/port/portrange as
//	                  tcpdump allows ("tcp port 9092", "ip6 net ::/0";
//	                  "tcp host H" and "ip port P" are errors, as there)
//	vlan [ID]         802.1Q, 802.1ad and 0x9100 tags
//	icmp, icmp6,      alone (not before host, port...): icmp is IPv4
//	sctp, arp, rarp   protocol 1, icmp6 next header 58 (also behind a
//	                  fragment header), sctp as tcp, arp and rarp the
//	                  EtherType
//	less N, greater N the frame's length <= N, >= N
//	A relop B         a comparison of two arithmetic expressions
//
// Arithmetic expressions are made of numbers, len (or length: the
// frame's length), proto[offset] and proto[offset:size] (size 1, 2 or 4
// bytes, big-endian; offset an expression), the operators + - * / % & | ^
// << >> and unary minus, and parentheses. proto is ether or link (from
// the link-layer header), ip, ip6, arp or rarp (from the network header),
// or tcp, udp, sctp, icmp or icmp6 (from the transport header). The
// comparisons are > < >= <= = (or ==) and !=; the arithmetic is unsigned
// 32-bit. The named numbers of pcap-filter(7) are numbers anywhere a
// number goes: tcpflags (13), tcp-fin, tcp-syn, tcp-rst, tcp-push,
// tcp-ack, tcp-urg, tcp-ece, tcp-cwr; icmptype (0), icmpcode (1),
// icmp-echoreply, icmp-unreach, icmp-sourcequench, icmp-redirect,
// icmp-echo, icmp-routeradvert, icmp-routersolicit, icmp-timxceed,
// icmp-paramprob, icmp-tstamp, icmp-tstampreply, icmp-ireq,
// icmp-ireqreply, icmp-maskreq, icmp-maskreply; icmp6type, icmp6code and
// the icmp6- names (icmp6-echo, icmp6-neighborsolicit...).
//
// All this is joined by "and"/"&&", "or"/"||", "not"/"!" and
// parentheses. Numbers are decimal, 0x hexadecimal or 0-prefixed octal,
// as libpcap reads them (port ranges: decimal).
//
// The grammar is libpcap's, with its surprises: "and" and "or" have the
// same precedence and group from the left ("a or b and c" is
// "(a or b) and c"); "not" binds tightest; and a bare value after "and" or
// "or" takes the qualifiers of the primitive before it, so "port 9092 or
// 9093" is "port 9092 or port 9093", "host A or B" is "host A or host B",
// and "not port 1 or 2" is "(not port 1) or port 2". In arithmetic, |
// binds loosest, then &, then << and >>, then + and -, then * and /; but
// libpcap's grammar gives % and ^ no precedence, so they take the operand
// just before them and everything after them: "len % 3 + 1" is
// "len % (3 + 1)", "len + 3 % 2" is "len + (3 % 2)". A number followed by
// an operator begins a comparison, not a value: "port 1 or 2 > 1" is
// "port 1 or (2 > 1)". A word may contain "-" as libpcap's scanner reads
// it, so "len-1" is one (unknown) word: write "len - 1".
//
// Not supported (a *SyntaxError names the position): ether and link
// other than ether[...], igmp and the other protocol names; icmp, icmp6,
// sctp, arp and rarp before host, net, port or a direction ("sctp port 1");
// proto, protochain, gateway, broadcast, multicast, byte; port and service
// names (port http);
// host names (only address literals: no DNS); "host 10" and "host 10.1"
// (libpcap reads a number as an address and a short dotted address as a
// network: use a full address, or net); IPv6 zones (fe80::1%eth0); mpls,
// pppoe, geneve and the other encapsulations.
//
// # Meaning, as tcpdump's
//
// Programs are the ones tcpdump 4.99 / libpcap 1.10 produce, instruction
// for instruction: the code generator builds libpcap's graph of blocks
// and the optimizer (opt.go) applies libpcap's passes to it, so the
// output of "tcpdump -d" is the test oracle (testdata/). What that means:
//
//   - ip and ip6 test the link layer's protocol field (the EtherType; on
//     raw IP the version nibble; on NULL and LOOP the address family).
//   - host with an IPv4 address also matches ARP and RARP packets about
//     that address (sender or target), unless qualified "ip host".
//   - port and portrange without tcp or udp match TCP, UDP and SCTP. On
//     IPv4 they look only at unfragmented packets and first fragments
//     (later fragments have no ports; "jset #0x1fff"), and find the
//     transport header behind any IPv4 options. On IPv6 they look only at
//     packets whose next header is TCP, UDP or SCTP right after the fixed
//     header: a packet with extension headers (hop-by-hop, a fragment
//     header) never matches a port.
//   - tcp and udp alone match IPv4 by protocol (fragments included), and
//     IPv6 when the next header is the protocol, or a fragment header
//     followed by it.
//   - vlan matches a tagged frame and moves the offsets of everything
//     after it in the expression by one tag, also on the other side of an
//     "or": "vlan or tcp port 9092" tests the port behind a tag even when
//     the frame has none. Put vlan last, or use "tcp port 9092 or (vlan
//     and tcp port 9092)". vlan works on Ethernet only (an error for other
//     link types, as in tcpdump).
//   - proto[offset] also tests that the frame carries proto: ip[...] and
//     ip6[...] the link's protocol, tcp[...], udp[...], sctp[...] and
//     icmp[...] an IPv4 packet of that protocol that is not a fragment
//     other than the first (the offset counts from the end of the IPv4
//     header, options included: these never look into IPv6), icmp6[...]
//     an IPv6 packet whose next header is ICMPv6 (no extension headers;
//     offset from the end of the fixed header). As in libpcap, the tests
//     of the right side of an arithmetic operator are lost: "ip[0] +
//     tcp[0] > 0" matches IPv4 packets that are not TCP, while "tcp[0] =
//     ip[0]" keeps both sides' tests.
//   - A load beyond the end of the frame rejects it, wherever it is in the
//     expression: "ip[100] = 1 or ip[9] = 6" rejects a TCP packet of
//     fewer than 101 bytes, the load being tried first. A
//     division or modulus by 0 at run time rejects the frame. A constant
//     0 divisor and a constant shift by more than 31 are errors: a
//     *SyntaxError at the operator when the right side starts with the
//     constant, as libpcap checks ("len / ip[0]" too: the first
//     instruction of the divisor loads the offset 0), else a plain error
//     from Compile and New when folding constants finds it ("len / (1 -
//     1)"). So is an expression so deep it needs more than the 16 words of
//     BPF scratch memory.
//   - An expression no frame of the link type can match (ip6 on raw IPv4,
//     "ip and not ip") compiles to a program that rejects everything
//     (Program.MatchesNothing), where tcpdump refuses it.
//
// Link types: Ethernet (1), Linux cooked SLL (113) and SLL2 (276), raw IP
// (101, and 12 and 14 as some BSDs write it), raw IPv4 (228) and IPv6
// (229), BSD NULL (0) and OpenBSD LOOP (108). On NULL the address family
// is compared little-endian, and ip6 means AF_INET6 as BSD, FreeBSD or
// macOS write it (24, 28, 30): both as libpcap compiles a filter for a
// capture file on a little-endian host (tcpdump -r). A NULL capture
// written on a big-endian host does not match ip or ip6, in tcpdump
// either.
//
// Live capture: Linux normally strips the 802.1Q tag from frames before a
// socket filter sees them (the tag is passed beside the frame), so "vlan"
// in a kernel filter does not see it; libpcap works around this with BPF
// extensions that only the kernel has. A vlan filter is meant for files.
// A shift by a computed amount of 32 or more ("len << tcp[0]") gives 0 in
// Program.Match, as in libpcap; the kernel takes the amount modulo 32.
//
// # Running programs
//
// Program.Match runs the program with its own interpreter: the semantics of
// the kernel and libpcap (a load beyond the end of the frame rejects it,
// as does a division by zero), no allocation, about 20 ns for the default
// filter. golang.org/x/net/bpf's VM gives the same verdicts (the tests
// check both) but is several times slower. Filter compiles an expression
// lazily for each link type it meets (a pcapng file may mix several) and
// is what capture.Reader.SetFilter and capture.LiveOptions.Filter take
// (Filter.RawFor). ParseRaw reads "tcpdump -ddd" output for --bpf-raw;
// NewRaw makes a Filter of it that runs on every link type as it is.
package filter
