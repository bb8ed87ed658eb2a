package rmq.interop;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

/**
 * Host strings as rmq spells them: "1.2.3.4:10911" and "[2001:db8::1]:10911".
 * Parsing never does a DNS lookup: only numeric addresses are accepted.
 */
final class HostAddress {
    private HostAddress() {
    }

    static InetSocketAddress parse(String text) {
        int colon = text.lastIndexOf(':');
        if (colon <= 0) {
            throw new IllegalArgumentException("host needs ip:port, got " + text);
        }
        String ip = text.substring(0, colon);
        int port = Integer.parseInt(text.substring(colon + 1));
        if (ip.startsWith("[") && ip.endsWith("]")) {
            ip = ip.substring(1, ip.length() - 1);
        } else if (ip.contains(":")) {
            throw new IllegalArgumentException("an IPv6 host must be bracketed: " + text);
        }
        if (!isNumeric(ip)) {
            throw new IllegalArgumentException("host must be a numeric address: " + text);
        }
        try {
            // getByName does not resolve a literal address.
            return new InetSocketAddress(InetAddress.getByName(ip), port);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("bad address " + text, e);
        }
    }

    /** Java prints IPv6 uncompressed ("2001:db8:0:0:0:0:0:1"); readers normalise it. */
    static String format(InetSocketAddress address) {
        InetAddress ip = address.getAddress();
        String host = ip.getHostAddress();
        if (host.contains(":")) {
            return "[" + host + "]:" + address.getPort();
        }
        return host + ":" + address.getPort();
    }

    private static boolean isNumeric(String ip) {
        return ip.chars().allMatch(c -> Character.digit(c, 16) >= 0 || c == '.' || c == ':');
    }
}
