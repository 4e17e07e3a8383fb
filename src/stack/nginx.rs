//! The gateway component: nginx from Debian's packages as a child process,
//! with a generated config (`stack/nginx/nginx.conf.template`) that routes the
//! path prefix `/sandbox/` to sandbox-agent over HTTP/1.1 without buffering,
//! so SSE streams through. Everything it writes stays in its run folder.

use super::StackError;
use crate::supervise::ProcessSpec;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TEMPLATE: &str = include_str!("../../stack/nginx/nginx.conf.template");
/// The route prefix, as in the bug report's `https://<sprite>/sandbox`.
pub(crate) const ROUTE: &str = "/sandbox";

/// Where Debian puts nginx, for when `/usr/sbin` is not on `PATH`.
const DEBIAN_NGINX: &str = "/usr/sbin/nginx";

/// The nginx binary (`$CONTINUITY_NGINX` when set), or a message naming the install command.
pub(crate) fn find_binary() -> Result<PathBuf, StackError> {
    if let Some(path) = std::env::var_os("CONTINUITY_NGINX").map(PathBuf::from) {
        return match path.is_file() {
            true => Ok(path),
            false => Err(StackError::NotInstalled(format!(
                "nginx is not installed at CONTINUITY_NGINX={} (Debian: apt-get install -y nginx)",
                path.display()
            ))),
        };
    }
    super::npm::which("nginx")
        .or_else(|| {
            Path::new(DEBIAN_NGINX)
                .is_file()
                .then(|| PathBuf::from(DEBIAN_NGINX))
        })
        .ok_or_else(|| {
            StackError::NotInstalled(
                "nginx is not installed (Debian: apt-get install -y nginx)".into(),
            )
        })
}

/// A gateway in `prefix` listening on `listen_port`, forwarding to `upstream_port`.
#[derive(Debug, Clone)]
pub(crate) struct GatewayConfig {
    pub binary: PathBuf,
    pub prefix: PathBuf,
    pub listen_port: u16,
    pub upstream_port: u16,
    /// nginx's `proxy_read_timeout`: an hour on the stack's gateway, a few
    /// seconds on the `gateway-read-timeout` target's.
    pub read_timeout: Duration,
}

/// The stack's gateway's `proxy_read_timeout`: an idle terminal stays open an hour.
pub(crate) const READ_TIMEOUT: Duration = Duration::from_secs(3600);

impl GatewayConfig {
    /// Writes `nginx.conf` into the prefix and returns how to run it.
    pub(crate) fn prepare(&self) -> Result<ProcessSpec, StackError> {
        if !self.prefix.is_absolute() {
            return Err(StackError::Invalid(crate::errors::Invalid(format!(
                "the gateway folder must be an absolute path, not {}",
                self.prefix.display()
            ))));
        }
        std::fs::create_dir_all(&self.prefix).map_err(StackError::io(format!(
            "cannot create {}",
            self.prefix.display()
        )))?;
        let prefix = self.prefix.display().to_string();
        // As root the workers need a user; Debian has no group "nobody", and
        // root keeps the run folder's files readable by the harness.
        let user = if crate::supervise::os::is_root() {
            "root root"
        } else {
            "nobody nogroup"
        };
        let config = TEMPLATE
            .replace("{{PREFIX}}", &prefix)
            .replace("{{LISTEN_PORT}}", &self.listen_port.to_string())
            .replace("{{UPSTREAM_PORT}}", &self.upstream_port.to_string())
            .replace(
                "{{READ_TIMEOUT}}",
                &format!("{}ms", self.read_timeout.as_millis()),
            )
            .replace("{{USER}}", user);
        let path = self.prefix.join("nginx.conf");
        std::fs::write(&path, config)
            .map_err(StackError::io(format!("cannot write {}", path.display())))?;
        Ok(ProcessSpec {
            name: "nginx".into(),
            program: self.binary.clone(),
            args: vec![
                "-p".into(),
                format!("{prefix}/"),
                "-e".into(),
                format!("{prefix}/error.log"),
                "-c".into(),
                path.display().to_string(),
            ],
            env: vec![],
            cwd: Some(self.prefix.clone()),
            log: self.prefix.join("nginx.log"),
        })
    }

    /// The base URL clients use: the route on the gateway.
    pub(crate) fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}{ROUTE}", self.listen_port)
    }

    /// Answers 200 only when nginx and sandbox-agent behind it are both up (502 otherwise).
    pub(crate) fn health_url(&self) -> String {
        format!("{}/v1/health", self.base_url())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_has_no_placeholders_left_and_listens_on_loopback_only() {
        let dir = tempfile::tempdir().unwrap();
        let config = GatewayConfig {
            binary: "/usr/sbin/nginx".into(),
            prefix: dir.path().join("gw"),
            listen_port: 4100,
            upstream_port: 4200,
            read_timeout: Duration::from_millis(2500),
        };
        let spec = config.prepare().unwrap();
        let text = std::fs::read_to_string(dir.path().join("gw/nginx.conf")).unwrap();
        assert!(!text.contains("{{"), "{text}");
        assert!(text.contains("listen 127.0.0.1:4100;"));
        assert!(text.contains("proxy_pass http://127.0.0.1:4200/;"));
        assert!(text.contains("proxy_buffering off;"));
        assert!(text.contains("proxy_read_timeout 2500ms;"), "{text}");
        assert_eq!(spec.args[0], "-p");
        assert_eq!(config.base_url(), "http://127.0.0.1:4100/sandbox");
    }
}
