//! The job docs/ci.md offers sandbox-agent's repository is the workflow
//! file beside it, word for word: the file is what a linter checks and a
//! user copies, so the page must not drift from it.

const PAGE: &str = include_str!("../../../docs/ci.md");
const JOB: &str = include_str!("../../../docs/ci/sandbox-agent-pr.yml");

#[test]
fn the_pull_request_job_in_ci_md_is_the_workflow_file() {
    let block = format!("```yaml\n{JOB}```\n");
    assert!(
        PAGE.contains(&block),
        "docs/ci.md does not hold docs/ci/sandbox-agent-pr.yml as a ```yaml block: copy the file into the page"
    );
    // What the job is for, as the workflow runs it.
    for step in [
        "cargo build --release -p sandbox-agent",
        "pack --pack-destination",
        "--server-bin pr=",
        "--sdk \"$sdk\"",
        "--expect \"$EXPECTATIONS\"",
    ] {
        assert!(JOB.contains(step), "the job lost {step:?}");
    }
}
