//! Every pinned upstream is on a supported line (issue #28): `upstreams.yaml` lists each pin, the
//! files that pin it and the date its support ends. This fails once a date has passed (or an
//! exception for an ended line has expired), and when a row no longer matches what the files pin,
//! so a stale pin turns the build red instead of surprising an operator.

mod support;
use support::repo;

use serde_json::Value;
use time::{macros::format_description, Date, OffsetDateTime};

fn date(v: &Value, what: &str) -> Date {
    let s = v.as_str().unwrap_or_else(|| panic!("{what}: not a date"));
    Date::parse(s, format_description!("[year]-[month]-[day]")).unwrap_or_else(|e| panic!("{what}: `{s}`: {e}"))
}

fn upstreams() -> Vec<Value> {
    let text = std::fs::read_to_string(repo().join("upstreams.yaml")).expect("upstreams.yaml");
    let doc: Value = nvcf_validate::yaml::from_str(&text).expect("upstreams.yaml parses");
    doc["upstreams"].as_array().expect("upstreams: a list").clone()
}

/// The verdict for one row on `today`: `Ok` while supported (or excepted), else why not.
fn verdict(u: &Value, today: Date) -> Result<(), String> {
    let name = u["name"].as_str().unwrap_or("?");
    let version = u["version"].as_str().unwrap_or("?");
    let ended = match &u["supportEnds"] {
        Value::String(s) if s == "ended" => None,
        v => Some(date(v, &format!("{name}: supportEnds"))),
    };
    if let Some(end) = ended {
        if today < end {
            return Ok(());
        }
    }
    let e = &u["exception"];
    if e.is_null() {
        return Err(format!(
            "{name} {version}: support ended {}; pin a supported version (and update upstreams.yaml), or \
             record an exception with its reason",
            ended
                .map(|d| d.to_string())
                .unwrap_or_else(|| "before this was written".into())
        ));
    }
    let reason = e["reason"].as_str().unwrap_or("").trim();
    if reason.len() < 40 {
        return Err(format!(
            "{name}: an exception needs a reason that says why no supported version can be pinned"
        ));
    }
    let checked = date(&e["checked"], &format!("{name}: exception.checked"));
    let until = date(&e["until"], &format!("{name}: exception.until"));
    if checked > today || until <= checked {
        return Err(format!(
            "{name}: exception checked {checked} / until {until} is not a past check with a later expiry"
        ));
    }
    if today >= until {
        return Err(format!(
            "{name} {version}: its exception (\"{reason}\", checked {checked}) expired on {until}; check again for a \
             supported version and pin it, or renew the exception with today's findings"
        ));
    }
    Ok(())
}

#[test]
fn every_pinned_upstream_is_supported_today() {
    let today = OffsetDateTime::now_utc().date();
    let rows = upstreams();
    assert!(
        rows.len() >= 5,
        "cert-manager, helm, helmfile, OpenBao and Kubernetes are pinned"
    );
    let stale: Vec<String> = rows.iter().filter_map(|u| verdict(u, today).err()).collect();
    assert!(stale.is_empty(), "stale pins on {today}:\n{}", stale.join("\n"));
}

#[test]
fn each_row_names_what_the_files_pin() {
    for u in upstreams() {
        let name = u["name"].as_str().expect("name");
        assert!(
            u["source"].as_str().is_some_and(|s| s.starts_with("https://")),
            "{name}: source URL"
        );
        assert!(u["previous"].is_string(), "{name}: previous version");
        let pins = u["pinnedIn"].as_array().unwrap_or_else(|| panic!("{name}: pinnedIn"));
        assert!(!pins.is_empty(), "{name}: pinnedIn is empty");
        let version = u["version"].as_str().expect("version");
        for p in pins {
            let file = p["file"].as_str().expect("file");
            let text = p["text"].as_str().expect("text");
            assert!(
                text.contains(version),
                "{name}: `{text}` does not name version {version}"
            );
            let body = std::fs::read_to_string(repo().join(file)).unwrap_or_else(|e| panic!("{name}: {file}: {e}"));
            assert!(
                body.contains(text),
                "{name}: {file} does not pin `{text}`: update upstreams.yaml with the pin"
            );
        }
    }
}

/// The verdicts themselves, on fixed days: a date that has passed, an exception that expired, one
/// without a reason.
#[test]
fn verdicts_turn_red_when_a_date_passes() {
    let row = |yaml: &str| -> Value { nvcf_validate::yaml::from_str(yaml).unwrap() };
    let day = |s: &str| date(&Value::String(s.into()), "day");
    let dated = row("name: x\nversion: '1'\nsupportEnds: 2027-01-13\n");
    assert!(verdict(&dated, day("2027-01-12")).is_ok());
    let err = verdict(&dated, day("2027-01-13")).unwrap_err();
    assert!(err.contains("support ended 2027-01-13"), "{err}");
    assert!(verdict(&row("name: x\nversion: '1'\nsupportEnds: ended\n"), day("2026-01-01")).is_err());
    let excepted = row(
        "name: x\nversion: '1'\nsupportEnds: ended\nexception:\n  reason: no newer release of x is carried by any reachable registry\n  checked: 2026-12-04\n  until: 2027-03-04\n",
    );
    assert!(verdict(&excepted, day("2027-03-03")).is_ok());
    assert!(verdict(&excepted, day("2027-03-04"))
        .unwrap_err()
        .contains("expired on 2027-03-04"));
    let vague = row(
        "name: x\nversion: '1'\nsupportEnds: ended\nexception: {reason: old, checked: 2026-12-04, until: 2027-03-04}\n",
    );
    assert!(verdict(&vague, day("2026-12-05"))
        .unwrap_err()
        .contains("needs a reason"));
}
