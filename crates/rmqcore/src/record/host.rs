//! Host addresses as records store them (format §1.4): the raw IP bytes (4 or 16),
//! then the port as a big-endian i32.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::big_endian::{read_i32, write_i32};
use crate::error::{Error, Result};

pub const IPV4_HOST_LENGTH: usize = 4 + 4;
pub const IPV6_HOST_LENGTH: usize = 16 + 4;

/// Parse `"ip:port"` or `"[ipv6]:port"`.
pub fn parse_host(argument: &'static str, text: &str) -> Result<SocketAddr> {
    text.parse::<SocketAddr>().map_err(|_| {
        Error::invalid(
            argument,
            format!("{text:?} is not an address of the form ip:port or [ipv6]:port"),
        )
    })
}

pub fn encoded_length(address: &SocketAddr) -> usize {
    match address {
        SocketAddr::V4(_) => IPV4_HOST_LENGTH,
        SocketAddr::V6(_) => IPV6_HOST_LENGTH,
    }
}

/// Write the address at `buf[at..]`; returns the number of bytes written.
pub fn encode_host(buf: &mut [u8], at: usize, address: &SocketAddr) -> usize {
    let port = i32::from(address.port());
    match address.ip() {
        IpAddr::V4(ip) => {
            buf[at..at + 4].copy_from_slice(&ip.octets());
            write_i32(buf, at + 4, port);
            IPV4_HOST_LENGTH
        }
        IpAddr::V6(ip) => {
            buf[at..at + 16].copy_from_slice(&ip.octets());
            write_i32(buf, at + 16, port);
            IPV6_HOST_LENGTH
        }
    }
}

/// Read an address of the given width. Java writes the port as an int; a value outside
/// u16 can only come from damage and is reported by the caller's validation, so it is
/// truncated here rather than rejected.
pub fn decode_host(buf: &[u8], at: usize, ipv6: bool) -> SocketAddr {
    if ipv6 {
        let octets: [u8; 16] = buf[at..at + 16].try_into().expect("16-byte slice");
        let port = read_i32(buf, at + 16) as u16;
        SocketAddr::new(IpAddr::V6(Ipv6Addr::from(octets)), port)
    } else {
        let octets: [u8; 4] = buf[at..at + 4].try_into().expect("4-byte slice");
        let port = read_i32(buf, at + 4) as u16;
        SocketAddr::new(IpAddr::V4(Ipv4Addr::from(octets)), port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_ipv4_and_ipv6() {
        for text in ["192.168.0.10:10911", "[2001:db8::1]:8080"] {
            let address = parse_host("store_host", text).unwrap();
            let mut buf = [0u8; 20];
            let written = encode_host(&mut buf, 0, &address);
            assert_eq!(written, encoded_length(&address));
            assert_eq!(decode_host(&buf, 0, address.is_ipv6()), address);
            assert_eq!(address.to_string(), text);
        }
    }

    #[test]
    fn rejects_malformed_addresses() {
        assert!(parse_host("store_host", "localhost").is_err());
        assert!(parse_host("store_host", "1.2.3.4").is_err());
    }
}
