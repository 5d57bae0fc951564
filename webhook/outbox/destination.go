package outbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrDestinationNotAllowed: a webhook endpoint's host is, or resolves to,
// a loopback, private, link-local, unspecified or otherwise non-public
// address, and private destinations are not allowed. A tenant's endpoint
// must not make the service post into the network it runs in (an
// internal admin port, a cloud metadata service).
var ErrDestinationNotAllowed = errors.New("destination not allowed: not a public address")

// nonPublic are the ranges PublicAddr refuses besides those netip names
// (loopback, private, link-local, multicast, unspecified): the special
// purpose ranges of the IANA registries that are not globally reachable.
var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (carrier-grade NAT)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the broadcast address
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use IPv4/IPv6 translation
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, ORCHIDv2, ...)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4, which carries an IPv4 address of any kind
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// nat64 is the well-known prefix of IPv4/IPv6 translation: the address
// is the IPv4 address in its last 32 bits, judged as such.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// PublicAddr reports whether ip is a public unicast address, one a
// webhook may be delivered to by default: not loopback, private (RFC
// 1918, unique local), link-local, multicast, unspecified, nor any other
// special-purpose range that is not globally reachable. An IPv4 address
// written as IPv6 (::ffff:10.0.0.1, 64:ff9b::10.0.0.1) is judged as the
// IPv4 address it is.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if nat64.Contains(ip.WithZone("")) {
		b := ip.As16()
		return PublicAddr(netip.AddrFrom4([4]byte(b[12:])))
	}
	if !ip.IsValid() || ip.IsUnspecified() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsMulticast() || ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip.WithZone("")) {
			return false
		}
	}
	return true
}

// CheckURL checks a webhook endpoint's URL when it is added and returns
// it as it is stored: an http(s) URL with a host and no user info. Unless
// allowPrivate, its host must not be a non-public address (PublicAddr),
// a name of the local host ("localhost", "*.localhost"), nor a number
// that is not a plain IP address ("2130706433", "0x7f.1", "127.1"), which
// some resolvers read as one; that is ErrDestinationNotAllowed. A name is
// not resolved here: what it resolves to is checked at each dial
// (Config.AllowPrivate), when it counts.
func CheckURL(raw string, allowPrivate bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.Hostname() == "" {
		return "", errors.New("want an http(s) URL with a host and no user info")
	}
	if allowPrivate {
		return u.String(), nil
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		if !PublicAddr(ip) {
			return "", fmt.Errorf("%w (%s)", ErrDestinationNotAllowed, ip)
		}
		return u.String(), nil
	}
	switch {
	case host == "localhost" || strings.HasSuffix(host, ".localhost"):
		return "", fmt.Errorf("%w (%s is the local host)", ErrDestinationNotAllowed, host)
	case numericHost(host):
		return "", fmt.Errorf("%w (%s is a number, not a host name; write an address as a.b.c.d)", ErrDestinationNotAllowed, host)
	}
	return u.String(), nil
}

// numericHost reports whether a host that is not an IP address is still a
// number: its last label is all digits or hexadecimal with 0x, which no
// top-level domain is, and which inet_aton-style resolvers take for an
// address (127.1, 0x7f000001, 017700000001).
func numericHost(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		return true
	}
	return strings.Trim(last, "0123456789") == ""
}

// publicOnly is a net.Dialer's ControlContext: it runs after the name is
// resolved, before each connection to one of its addresses, and refuses
// an address that is not public. Checking here, not before the request,
// means a name whose DNS answer changes between a check and the dial (DNS
// rebinding) gains nothing: the address checked is the one connected to.
func publicOnly(_ context.Context, _, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrDestinationNotAllowed, address)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !PublicAddr(ip) {
		return fmt.Errorf("%w: %s", ErrDestinationNotAllowed, address)
	}
	return nil
}

// publicTransport returns a copy of t (http.DefaultTransport's settings
// when nil) whose connections reach public addresses only. It dials
// directly, never through a proxy named by the environment: the check
// would see the proxy's address, and the proxy would reach the endpoint
// unchecked.
func publicTransport(t http.RoundTripper) (*http.Transport, error) {
	var base *http.Transport
	switch tt := t.(type) {
	case nil:
		base = http.DefaultTransport.(*http.Transport)
	case *http.Transport:
		base = tt
	default:
		return nil, fmt.Errorf("outbox: Config.Client.Transport is a %T: it must be an *http.Transport (or nil) unless AllowPrivate, so that every dial can be checked", t)
	}
	tr := base.Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, ControlContext: publicOnly}
	tr.DialContext = d.DialContext
	// The deprecated dial hooks are cleared too: DialTLS, when set, is
	// used instead of DialContext for https.
	//lint:ignore SA1019 clearing the deprecated hooks is what keeps them from bypassing the check
	tr.DialTLSContext, tr.DialTLS, tr.Dial = nil, nil, nil
	tr.Proxy = nil
	return tr, nil
}
