//! Live handshake probes (TLS over TCP, QUIC) against a deployed router. (Being written.)
