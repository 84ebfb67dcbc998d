//! PEM, X.509, webpki verification and the trust-bundle fingerprint. (Being written.)
