//! The SDK host's tests (`sdk.rs`): candidate SDK packages, how their tarballs are checked and where they install.

use super::*;

fn package(dir: &Path, name: &str, deps: &[&str]) -> PathBuf {
    let folder = dir.join(name);
    std::fs::create_dir_all(folder.join("dist")).unwrap();
    let deps: serde_json::Map<String, serde_json::Value> = deps
        .iter()
        .map(|d| (d.to_string(), "0.4.2".into()))
        .collect();
    std::fs::write(
        folder.join("package.json"),
        serde_json::json!({"name": name, "version": "0.4.2", "dependencies": deps}).to_string(),
    )
    .unwrap();
    std::fs::write(folder.join("dist/index.js"), "export const x = 1;\n").unwrap();
    folder
}

/// Issue 43, item 6: a FIFO inside a candidate's package folder
/// blocked `--sdk` (and `rerun`) for ever in the content digest.
#[test]
fn a_fifo_inside_a_package_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = package(dir.path(), "sandbox-agent", &[]);
    let before = content_digest(&read_candidate(std::slice::from_ref(&sdk)).unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(sdk.join("dist/pipe"))
        .status()
        .unwrap();
    assert!(made.success());
    let packages = read_candidate(std::slice::from_ref(&sdk)).unwrap();
    let e = content_digest(&packages).unwrap_err();
    assert!(e.to_string().contains("FIFO"), "{e}");
    std::fs::remove_file(sdk.join("dist/pipe")).unwrap();
    assert_eq!(content_digest(&packages).unwrap(), before);
}

#[test]
fn a_candidate_is_packages_whose_further_ones_replace_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = package(dir.path(), "sandbox-agent", &["acp-http-client"]);
    let acp = package(dir.path(), "acp-http-client", &[]);
    let other = package(dir.path(), "left-pad", &[]);
    let read = read_candidate(&[sdk.clone(), acp.clone()]).unwrap();
    assert_eq!(read[1].name, "acp-http-client");
    let (path, why) = read_candidate(&[sdk.clone(), other.clone()]).unwrap_err();
    assert_eq!(path, other);
    assert!(why.0.contains("not a dependency"), "{why}");
    let (_, why) = read_candidate(&[sdk.clone(), sdk.clone()]).unwrap_err();
    assert!(why.0.contains("second package"), "{why}");
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (_, why) = read_candidate(&[empty]).unwrap_err();
    assert!(why.0.contains("no package.json"), "{why}");
    let (_, why) = read_candidate(&[dir.path().join("nowhere")]).unwrap_err();
    assert_eq!(why.0, "no such file or folder");
}

#[test]
fn a_tarball_must_hold_package_json_as_npm_pack_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = package(dir.path(), "sandbox-agent", &["acp-http-client"]);
    // npm pack's layout: everything under `package/`.
    let staged = dir.path().join("stage");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::rename(&sdk, staged.join("package")).unwrap();
    let tgz = dir.path().join("sandbox-agent-0.4.2.tgz");
    let tar = Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(&staged)
        .arg("package")
        .status()
        .unwrap();
    assert!(tar.success());
    let read = read_package(&tgz).unwrap();
    assert_eq!(
        (read.name.as_str(), read.dependencies.as_slice()),
        ("sandbox-agent", ["acp-http-client".to_string()].as_slice())
    );
    let junk = dir.path().join("junk.tgz");
    std::fs::write(&junk, "not a tarball").unwrap();
    let why = read_package(&junk).unwrap_err();
    assert!(why.0.starts_with("not an npm package"), "{why}");
}

#[test]
fn the_install_folder_follows_the_content_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = package(dir.path(), "sandbox-agent", &["acp-http-client"]);
    let read = |p: &Path| read_candidate(&[p.to_path_buf()]).unwrap();
    let before = content_key(&read(&sdk)).unwrap();
    // A node_modules of the checkout is not what is installed.
    std::fs::create_dir_all(sdk.join("node_modules/x")).unwrap();
    std::fs::write(sdk.join("node_modules/x/y.js"), "1").unwrap();
    assert_eq!(content_key(&read(&sdk)).unwrap(), before);
    std::fs::write(sdk.join("dist/index.js"), "export const x = 2;\n").unwrap();
    assert_ne!(content_key(&read(&sdk)).unwrap(), before);
}

#[test]
fn further_packages_override_the_sdks_dependencies() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = package(dir.path(), "sandbox-agent", &["acp-http-client"]);
    let acp = package(dir.path(), "acp-http-client", &[]);
    let manifest: serde_json::Value =
        serde_json::from_str(&candidate_manifest(&read_candidate(&[sdk, acp]).unwrap())).unwrap();
    assert_eq!(
        manifest["overrides"],
        serde_json::json!({"acp-http-client": "$acp-http-client"})
    );
    assert!(manifest["dependencies"]["sandbox-agent"]
        .as_str()
        .unwrap()
        .starts_with("file:/"));
}
