//! TLS as libpq does it, with rustls (no OpenSSL): `sslmode` `disable`,
//! `prefer` (TLS when the server offers it), `require` (TLS or nothing),
//! `verify-ca` (and the server's certificate signed by a trusted CA) and
//! `verify-full` (and issued for the host connected to). The trusted CAs
//! are `sslrootcert` (default `~/.postgresql/root.crt`; `system` for the
//! system's bundle); when that file exists, `prefer` and `require` check
//! the chain as `verify-ca` does, as libpq's do. A client certificate is
//! `sslcert`/`sslkey` (default `~/.postgresql/postgresql.crt`/`.key` when
//! both exist).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::conninfo::{Params, PgEnv};

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    pub fn parse(s: &str) -> Result<SslMode, String> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode {other:?} is not one of disable, allow, prefer, require, verify-ca, verify-full"
                ))
            }
        })
    }

    /// The driver's mode: TLS attempted (`Prefer`), demanded, or not.
    pub fn driver(self) -> postgres::config::SslMode {
        match self {
            SslMode::Disable => postgres::config::SslMode::Disable,
            // libpq's `allow` tries clear text first; the driver cannot, so it prefers TLS.
            SslMode::Allow | SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => postgres::config::SslMode::Require,
        }
    }
}

/// The TLS connector for `p`'s `sslmode` and certificates (`None` for `disable`).
pub(crate) fn connector(mode: SslMode, p: &Params, env: &PgEnv) -> Result<Option<MakeRustlsConnect>, String> {
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let home_file = |name: &str| env.home().map(|h| h.join(".postgresql").join(name));
    let root = match p.get("sslrootcert").map(String::as_str) {
        Some("system") => Some(system_bundle()?),
        Some(path) => Some(PathBuf::from(path)),
        None => home_file("root.crt").filter(|f| f.exists()),
    };
    let mode = match (mode, p.get("sslrootcert").map(String::as_str)) {
        // As libpq: `system` means the host name is checked too.
        (_, Some("system")) => SslMode::VerifyFull,
        // A root certificate present makes `prefer` and `require` check the chain.
        (SslMode::Allow | SslMode::Prefer | SslMode::Require, _) if root.is_some() => SslMode::VerifyCa,
        (m, _) => m,
    };
    let verifier: Arc<dyn ServerCertVerifier> = match (&root, mode) {
        (None, SslMode::VerifyCa | SslMode::VerifyFull) => {
            let wanted = home_file("root.crt").map_or("~/.postgresql/root.crt".into(), |f| f.display().to_string());
            return Err(format!(
                "sslmode {} needs the CA's certificate: set sslrootcert (none at {wanted})",
                if mode == SslMode::VerifyCa { "verify-ca" } else { "verify-full" }
            ));
        }
        (None, _) => Arc::new(AnyCertificate(provider.clone())),
        (Some(file), m) => {
            let mut roots = RootCertStore::empty();
            for cert in read_certs(file)? {
                roots.add(cert).map_err(|e| format!("{}: {e}", file.display()))?;
            }
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| format!("{}: {e}", file.display()))?;
            if m == SslMode::VerifyFull {
                webpki
            } else {
                Arc::new(ChainOnly(webpki))
            }
        }
    };
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier);
    let cert = p.get("sslcert").map(PathBuf::from).or_else(|| home_file("postgresql.crt").filter(|f| f.exists()));
    let key = p.get("sslkey").map(PathBuf::from).or_else(|| home_file("postgresql.key").filter(|f| f.exists()));
    let config = match (cert, key) {
        (Some(cert), Some(key)) => {
            let chain = read_certs(&cert)?;
            let key = read_key(&key)?;
            builder.with_client_auth_cert(chain, key).map_err(|e| format!("{}: {e}", cert.display()))?
        }
        (Some(cert), None) => return Err(format!("{}: a client certificate without sslkey", cert.display())),
        _ => builder.with_no_client_auth(),
    };
    Ok(Some(MakeRustlsConnect::new(config)))
}

/// The system's bundle of trusted CAs.
fn system_bundle() -> Result<PathBuf, String> {
    ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .ok_or_else(|| "sslrootcert=system: no system bundle of CA certificates found".into())
}

fn read_certs(file: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", file.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it", file.display()));
    }
    Ok(certs)
}

/// The client's private key; refused, as libpq does, when others may read it.
fn read_key(file: &Path) -> Result<PrivateKeyDer<'static>, String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let meta = std::fs::metadata(file).map_err(|e| format!("{}: {e}", file.display()))?;
        let mode = meta.permissions().mode();
        let allowed = if meta.uid() == 0 { 0o037 } else { 0o077 };
        if mode & allowed != 0 {
            return Err(format!(
                "{}: the private key may be read by others (mode {:04o}): chmod 0600 it",
                file.display(),
                mode & 0o7777
            ));
        }
    }
    PrivateKeyDer::from_pem_file(file).map_err(|e| format!("{}: {e}", file.display()))
}

/// `verify-ca`: the chain to a trusted CA is checked, the host name is not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.0.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            // The chain was verified first; only the name did not match.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `prefer`/`require` without a root certificate: encrypted, the server not
/// authenticated (libpq's behaviour; `verify-full` is what authenticates it).
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
