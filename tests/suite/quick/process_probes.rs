//! The support module's own checks: the `/proc` readers the real tests
//! use to prove that nothing is left running or listening off loopback.

use crate::support;

#[test]
fn processes_with_finds_a_running_process() {
    // A duration no other process uses: this binary's pid as the fraction.
    let seconds = format!("3000.{}", std::process::id());
    let mut child = std::process::Command::new("sleep")
        .arg(&seconds)
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let found = loop {
        let found = support::processes_with(&["sleep", &seconds]);
        if !found.is_empty() || std::time::Instant::now() > deadline {
            break found;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(found.len(), 1, "{found:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(support::processes_with(&["sleep", &seconds]).is_empty());
}

#[test]
fn proc_addresses_parse() {
    assert_eq!(
        support::parse_proc_addr("0100007F:1F90", false).to_string(),
        "127.0.0.1:8080"
    );
    assert_eq!(
        support::parse_proc_addr("00000000000000000000000001000000:0050", true).to_string(),
        "[::1]:80"
    );
}
