//! OpenBao HA as the stack deploys it, with real servers (issue #13): three `bao server`
//! processes on loopback run the raft configuration rendered for the `default` environment
//! (the values helmfile hands the upstream chart as `server.ha.raft.config`, with only paths and
//! addresses rewritten for loopback), on a listener certificate issued for exactly the names the
//! rendered bootstrap Certificate `openbao-server-tls` asks for, by a CA made the way the
//! bootstrap chain makes it. The test initialises and unseals (Shamir, as an operator does),
//! lets the peers join over TLS verified against that CA (`leader_ca_cert_file`,
//! `leader_tls_servername`), provisions with the rendered `provision.sh`, signs the router
//! Certificate as cert-manager would, kills the leader, and shows that a new leader is elected,
//! that signing still works and that no acknowledged write was lost. A server with the same config
//! but another CA is shown to be refused by TLS verification when it tries to join.
//!
//! What differs from the cluster (and why): the listener/cluster addresses and each
//! `leader_api_addr` point at loopback ports (no cluster DNS here), while `leader_tls_servername`
//! keeps the peer's DNS name so the join still verifies that name; paths point into a temporary
//! directory; `service_registration "kubernetes"` is dropped (there is no Kubernetes API); the
//! pod's BAO_API_ADDR / BAO_CLUSTER_ADDR / BAO_RAFT_NODE_ID environment (set by the chart from
//! our values) becomes `api_addr` / `cluster_addr` / BAO_RAFT_NODE_ID of each process.
//!
//! Needs `bao` (the pinned one, ci/tools.lock), `helm` and `helmfile`.
//! A second test walks the documented upgrade from standalone file storage to raft.
//! Cost: about 35 s wall time on an idle 2-core machine (the two tests run in parallel), most of
//! it raft autopilot promoting the new peers to voters.

mod support;
use support::openbao::*;
use support::tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use nvcf_validate::pki;
use rcgen::{CertificateParams, DnType, ExtendedKeyUsagePurpose, Issuer, KeyPair, SanType};
use serde_json::Value;
use tempfile::TempDir;

const TLS_DIR: &str = "/openbao/userconfig/openbao-server-tls";
const DATA_DIR: &str = "\"/openbao/data\"";

// ------------------------------------------------------------------ the rendered HA server

/// What the environment hands the upstream chart for the HA server.
struct HaValues {
    config: String,
    replicas: usize,
    /// `server.ha.apiAddr` / `clusterAddr`: the pod's BAO_API_ADDR / BAO_CLUSTER_ADDR.
    api_addr: String,
    cluster_addr: String,
    set_node_id: bool,
}

fn ha_values(env: &str) -> HaValues {
    let v = release_values(env, "openbao");
    let ha = &v["server"]["ha"];
    assert_eq!(ha["enabled"], true, "{env}: server.ha.enabled");
    assert_eq!(ha["raft"]["enabled"], true, "{env}: server.ha.raft.enabled");
    assert_ne!(
        v["server"]["standalone"]["enabled"], true,
        "{env}: standalone must be off in HA"
    );
    let s = |x: &Value, what: &str| {
        x.as_str()
            .unwrap_or_else(|| panic!("{env}: {what} is not a string: {x}"))
            .to_string()
    };
    HaValues {
        config: s(&ha["raft"]["config"], "server.ha.raft.config"),
        replicas: ha["replicas"].as_u64().expect("server.ha.replicas is a number") as usize,
        api_addr: s(&ha["apiAddr"], "server.ha.apiAddr"),
        cluster_addr: s(&ha["clusterAddr"], "server.ha.clusterAddr"),
        set_node_id: ha["raft"]["setNodeId"] == true,
    }
}

/// `https://host:port` -> (host, port).
fn host_port(url: &str) -> (String, u16) {
    let rest = url
        .strip_prefix("https://")
        .unwrap_or_else(|| panic!("{url} is not https://"));
    let (h, p) = rest.rsplit_once(':').unwrap_or_else(|| panic!("{url} has no port"));
    (h.to_string(), p.parse().unwrap_or_else(|_| panic!("{url}: port")))
}

/// Replace `from` by `to`, requiring exactly `n` occurrences (a changed config fails loudly
/// instead of silently running something else).
fn replace_n(text: &str, from: &str, to: &str, n: usize) -> String {
    let found = text.matches(from).count();
    assert_eq!(
        found, n,
        "expected {n} occurrence(s) of {from:?} in the rendered config:\n{text}"
    );
    text.replace(from, to)
}

/// Every `key = "value"` of the config, in order.
fn hcl_strings(config: &str, key: &str) -> Vec<String> {
    config
        .lines()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
        .collect()
}

struct Peer {
    /// The pod name (`openbao-<i>`), also the raft node id (setNodeId).
    pod: String,
    /// The name peers dial and verify (`leader_tls_servername`).
    dns: String,
    api: u16,
    cluster: u16,
}

/// The peers the rendered retry_join stanzas name, in pod order, with loopback ports.
fn peers(ha: &HaValues) -> Vec<Peer> {
    let addrs = hcl_strings(&ha.config, "leader_api_addr");
    let names = hcl_strings(&ha.config, "leader_tls_servername");
    let cas = hcl_strings(&ha.config, "leader_ca_cert_file");
    assert_eq!(addrs.len(), ha.replicas, "one retry_join per replica");
    assert_eq!(names.len(), addrs.len(), "every retry_join sets leader_tls_servername");
    assert_eq!(cas.len(), addrs.len(), "every retry_join sets leader_ca_cert_file");
    let mut out: Vec<Peer> = Vec::new();
    for ((addr, name), ca) in addrs.iter().zip(&names).zip(&cas) {
        let (host, port) = host_port(addr);
        assert_eq!(port, 8200, "{addr}: retry_join dials the API port");
        assert_eq!(
            &host, name,
            "{addr}: leader_tls_servername must be the dialled peer name"
        );
        assert_eq!(
            ca,
            &format!("{TLS_DIR}/ca.crt"),
            "peers are verified against the bootstrap CA"
        );
        let pod = host.split('.').next().unwrap().to_string();
        let ordinal: usize = pod
            .strip_prefix("openbao-")
            .and_then(|o| o.parse().ok())
            .unwrap_or_else(|| panic!("{host}: not a StatefulSet pod name openbao-<i>"));
        assert_eq!(ordinal, out.len(), "retry_join peers in pod order");
        out.push(Peer {
            pod,
            dns: host,
            api: free_port(),
            cluster: free_port(),
        });
    }
    out
}

/// The rendered config with paths and addresses rewritten for peer `i` on loopback.
fn loopback_config(ha: &HaValues, peers: &[Peer], i: usize, tls: &Path, data: &Path) -> String {
    let c = &ha.config;
    assert!(
        !c.contains("{{"),
        "the chart runs tpl on the config; ours must be literal"
    );
    for token in ["HOST_IP", "POD_IP", "HOSTNAME", "API_ADDR", "RAFT_ADDR"] {
        assert!(
            !c.contains(token),
            "the chart seds {token} in the config; ours must not use it"
        );
    }
    let mut c = replace_n(c, TLS_DIR, &tls.display().to_string(), 2 + peers.len());
    c = replace_n(&c, DATA_DIR, &format!("\"{}\"", data.display()), 1);
    c = replace_n(&c, "\"[::]:8200\"", &format!("\"127.0.0.1:{}\"", peers[i].api), 1);
    c = replace_n(&c, "\"[::]:8201\"", &format!("\"127.0.0.1:{}\"", peers[i].cluster), 1);
    for p in peers {
        c = replace_n(
            &c,
            &format!("\"https://{}:8200\"", p.dns),
            &format!("\"https://127.0.0.1:{}\"", p.api),
            1,
        );
    }
    c = replace_n(&c, "service_registration \"kubernetes\" {}", "", 1);
    assert!(!c.contains("tls_disable"), "the rendered listener must not disable TLS");
    // What the chart passes as BAO_API_ADDR / BAO_CLUSTER_ADDR, on loopback.
    format!(
        "{c}\napi_addr = \"https://127.0.0.1:{}\"\ncluster_addr = \"https://127.0.0.1:{}\"\n",
        peers[i].api, peers[i].cluster
    )
}

// ------------------------------------------------------------------ the bootstrap chain

/// cert-manager's CA issuer: a self-signed CA, and the listener certificate for exactly the
/// rendered Certificate's dnsNames and ipAddresses (`tls.crt`, `tls.key`, `ca.crt`).
fn bootstrap_tls(server_cert: &Value, dir: &Path) -> String {
    let ca = support::probe::root("NVCF OpenBao bootstrap CA (test)");
    let strings = |k: &str| -> Vec<String> {
        server_cert["spec"][k]
            .as_array()
            .map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(DnType::CommonName, "openbao");
    for n in strings("dnsNames") {
        p.subject_alt_names.push(SanType::DnsName(n.try_into().unwrap()));
    }
    for ip in strings("ipAddresses") {
        p.subject_alt_names.push(SanType::IpAddress(ip.parse().unwrap()));
    }
    let usages = strings("usages");
    assert!(
        usages.iter().any(|u| u == "server auth"),
        "openbao-server-tls has server auth"
    );
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &Issuer::from_params(&ca.params, &ca.key)).unwrap();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("tls.crt"), cert.pem()).unwrap();
    std::fs::write(dir.join("tls.key"), key.serialize_pem()).unwrap();
    std::fs::write(dir.join("ca.crt"), &ca.pem).unwrap();
    ca.pem
}

// ------------------------------------------------------------------ the servers

struct Node {
    peer: Peer,
    child: Option<Child>,
    log: PathBuf,
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(c) = self.child.as_mut() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

struct Cluster {
    nodes: Vec<Node>,
    tls: PathBuf,
    home: TempDir,
}

impl Cluster {
    /// The CLI against node `i`, verifying its certificate for `server_name`.
    fn cmd(&self, program: &Path, i: usize, server_name: &str, token: &str) -> Command {
        let mut c = Command::new(program);
        c.env_clear()
            .env("HOME", self.home.path())
            .env("PATH", bao_path())
            .env("BAO_ADDR", format!("https://127.0.0.1:{}", self.nodes[i].peer.api))
            .env("BAO_CACERT", self.tls.join("ca.crt"))
            .env("BAO_TLS_SERVER_NAME", server_name)
            .env("BAO_CLIENT_TIMEOUT", "10s")
            .stdin(Stdio::null());
        if !token.is_empty() {
            c.env("BAO_TOKEN", token);
        }
        c
    }

    fn bao(&self, i: usize, token: &str, args: &[&str]) -> Output {
        let name = self.nodes[i].peer.dns.clone();
        self.cmd(&tool("bao"), i, &name, token)
            .args(args)
            .output()
            .expect("run bao")
    }

    fn bao_ok(&self, i: usize, token: &str, args: &[&str]) -> String {
        let o = self.bao(i, token, args);
        assert!(
            o.status.success(),
            "bao {args:?} on {} failed:\n{}\n--- server log\n{}",
            self.nodes[i].peer.pod,
            out_text(&o),
            self.log_tail(i)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    fn json(&self, i: usize, token: &str, args: &[&str]) -> Value {
        serde_json::from_str(&self.bao_ok(i, token, args)).expect("bao -format=json prints JSON")
    }

    fn log_tail(&self, i: usize) -> String {
        let t = std::fs::read_to_string(&self.nodes[i].log).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn alive(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| self.nodes[i].child.is_some())
    }

    /// The node that says it is the active one (`sys/leader` is_self), if any.
    fn leader(&self, token: &str) -> Option<usize> {
        self.alive().find(|&i| {
            let o = self.bao(i, token, &["read", "-format=json", "sys/leader"]);
            o.status.success()
                && serde_json::from_slice::<Value>(&o.stdout)
                    .map(|v| v["data"]["is_self"] == true)
                    .unwrap_or(false)
        })
    }

    fn wait<T>(&self, what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(t) = f() {
                return t;
            }
            if Instant::now() > deadline {
                let logs: Vec<String> = self
                    .alive()
                    .map(|i| format!("--- {}\n{}", self.nodes[i].peer.pod, self.log_tail(i)))
                    .collect();
                panic!("timed out after {secs}s waiting for {what}\n{}", logs.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// One `bao server` on `config`, logging to `log`.
fn spawn(config: &Path, log: &Path, node_id: Option<&str>, home: &Path) -> Child {
    let out = std::fs::File::create(log).unwrap();
    let mut c = Command::new(tool("bao"));
    c.arg("server")
        .arg(format!("-config={}", config.display()))
        .env_clear()
        .env("HOME", home)
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .stdin(Stdio::null());
    if let Some(id) = node_id {
        c.env("BAO_RAFT_NODE_ID", id);
    }
    c.spawn().expect("start bao server")
}

fn start(ha: &HaValues, work: &Path) -> Cluster {
    let tls = work.join("tls");
    let peers = peers(ha);
    let mut nodes = Vec::new();
    let n = peers.len();
    for i in 0..n {
        let data = work.join(format!("data-{i}"));
        std::fs::create_dir_all(&data).unwrap();
        let config = loopback_config(ha, &peers, i, &tls, &data);
        let file = work.join(format!("openbao-{i}.hcl"));
        std::fs::write(&file, &config).unwrap();
        let log = work.join(format!("openbao-{i}.log"));
        let id = ha.set_node_id.then_some(peers[i].pod.as_str());
        nodes.push((spawn(&file, &log, id, work), log));
    }
    let nodes = nodes
        .into_iter()
        .zip(peers)
        .map(|((child, log), peer)| Node {
            peer,
            child: Some(child),
            log,
        })
        .collect();
    Cluster {
        nodes,
        tls,
        home: TempDir::new().unwrap(),
    }
}

// ------------------------------------------------------------------ cert-manager's request

struct Issued {
    serial: String,
    chain_pem: String,
}

fn sign_as_cert_manager(c: &Cluster, i: usize, token: &str, r: &Rendered, dir: &Path, n: usize) -> Issued {
    let cert = &r.certificates[0];
    let dns: Vec<String> = cert["spec"]["dnsNames"]
        .as_array()
        .expect("router Certificate has dnsNames")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let req = csr(
        &dns,
        key_algorithm(cert),
        vec![ExtendedKeyUsagePurpose::ServerAuth],
        &[],
    );
    let f = dir.join(format!("router-{n}.csr"));
    std::fs::write(&f, &req.pem).unwrap();
    let ttl = go_duration(duration_secs(cert["spec"]["duration"].as_str().unwrap_or("2160h")));
    let v = c.json(
        i,
        token,
        &[
            "write",
            "-format=json",
            &r.sign_path,
            &format!("csr=@{}", f.display()),
            "common_name=",
            &format!("alt_names={}", dns.join(",")),
            "ip_sans=",
            "uri_sans=",
            &format!("ttl={ttl}"),
            "exclude_cn_from_sans=true",
        ],
    );
    let leaf = v["data"]["certificate"].as_str().expect("sign returns a certificate");
    let issuing = v["data"]["issuing_ca"].as_str().expect("sign returns the issuing CA");
    Issued {
        serial: v["data"]["serial_number"].as_str().expect("serial_number").to_string(),
        chain_pem: format!("{leaf}\n{issuing}\n"),
    }
}

// ------------------------------------------------------------------ the test

#[test]
fn openbao_ha_raft_over_tls_survives_the_loss_of_its_leader() {
    let t0 = Instant::now();
    let ha = ha_values("default");
    assert!(ha.replicas >= 3, "HA runs at least three raft peers");
    let r = render_pki("default");
    let server_cert = object(&r.objects, "Certificate", "openbao-server-tls");
    let issuer = object(&r.objects, "ClusterIssuer", "openbao");
    let (service_host, _) = host_port(issuer["spec"]["vault"]["server"].as_str().expect("vault.server"));
    // The pod addresses the chart sets from our values name the pod's peer name.
    for (what, tmpl, port) in [("apiAddr", &ha.api_addr, 8200), ("clusterAddr", &ha.cluster_addr, 8201)] {
        let (host, p) = host_port(tmpl);
        assert_eq!(p, port, "server.ha.{what}");
        let host0 = host
            .replace("$(BAO_K8S_POD_NAME)", "openbao-0")
            .replace("$(HOSTNAME)", "openbao-0");
        assert_eq!(
            host0,
            hcl_strings(&ha.config, "leader_tls_servername")[0],
            "server.ha.{what} names the pod as its peers verify it"
        );
    }

    let work = TempDir::new().unwrap();
    bootstrap_tls(server_cert, &work.path().join("tls"));
    let mut c = start(&ha, work.path());
    let n = c.nodes.len();

    // 1. Initialise one peer (Shamir: 3 shares, 2 to unseal), unseal it: it becomes the leader.
    c.wait("openbao-0 to answer", 30, || {
        let o = c.bao(0, "", &["status", "-format=json"]);
        // exit 2 = sealed, the answer we expect from an uninitialised server
        (o.status.code() == Some(2)).then_some(())
    });
    let init = c.json(
        0,
        "",
        &["operator", "init", "-key-shares=3", "-key-threshold=2", "-format=json"],
    );
    let keys: Vec<String> = init["unseal_keys_b64"]
        .as_array()
        .expect("unseal keys")
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let root = init["root_token"].as_str().expect("root token").to_string();
    let unseal = |c: &Cluster, i: usize| {
        for k in &keys[..2] {
            c.bao_ok(i, "", &["operator", "unseal", k]);
        }
    };
    unseal(&c, 0);
    c.wait("openbao-0 to become the leader", 30, || {
        c.leader(&root).filter(|&i| i == 0)
    });

    // 2. The other peers join through retry_join (TLS to the leader, verified against the
    //    bootstrap CA for its peer name) once their keys are supplied: initialised-but-sealed
    //    first, then unsealed.
    for i in 1..n {
        c.wait(&format!("{} to reach the leader", c.nodes[i].peer.pod), 30, || {
            let v: Value = serde_json::from_slice(&c.bao(i, "", &["status", "-format=json"]).stdout).ok()?;
            (v["initialized"] == true).then_some(())
        });
        unseal(&c, i);
    }

    // 3. Provision with the rendered script, addressing OpenBao by its Service name as the Job
    //    and cert-manager do (the bootstrap certificate must cover it).
    let script = work.path().join("provision.sh");
    std::fs::write(&script, &r.script).unwrap();
    let leader = c.leader(&root).expect("a leader");
    let mut prov = c.cmd(Path::new("bash"), leader, &service_host, &root);
    prov.arg(&script).env("WAIT_SECONDS", "60");
    r.provision_env(&mut prov, work.path());
    let prov = prov.output().expect("run provision.sh");
    assert!(prov.status.success(), "provision.sh failed:\n{}", out_text(&prov));
    let root_pem = String::from_utf8_lossy(&prov.stdout).into_owned();
    let sign_policy = script_var(&r.script, "SIGN_POLICY_NAME");
    let sign_token = c
        .bao_ok(
            leader,
            &root,
            &[
                "token",
                "create",
                "-policy",
                &sign_policy,
                "-ttl",
                "30m",
                "-field",
                "token",
            ],
        )
        .trim()
        .to_string();

    // 4. Every peer a voter (autopilot promotes joined peers after they are stable).
    c.wait("every peer to be a raft voter", 60, || {
        let v = c.json(leader, &root, &["operator", "raft", "list-peers", "-format=json"]);
        let servers = v["data"]["config"]["servers"].as_array()?.clone();
        let voters: Vec<&str> = servers
            .iter()
            .filter(|s| s["voter"] == true)
            .filter_map(|s| s["node_id"].as_str())
            .collect();
        (voters.len() == n).then_some(())
    });
    let peers_ids: Vec<String> = c.json(leader, &root, &["operator", "raft", "list-peers", "-format=json"])["data"]
        ["config"]["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["node_id"].as_str().unwrap().to_string())
        .collect();
    let mut want: Vec<String> = c.nodes.iter().map(|nd| nd.peer.pod.clone()).collect();
    let mut got = peers_ids.clone();
    want.sort();
    got.sort();
    assert_eq!(got, want, "raft node ids are the pod names (setNodeId)");

    // 4b. Verification is real: a server with the same rendered config but another CA (its own
    //     bootstrap chain) cannot join, because the peers' certificates do not verify against it.
    {
        let rogue_dir = work.path().join("rogue");
        bootstrap_tls(server_cert, &rogue_dir.join("tls"));
        let data = rogue_dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        // Peer 0's stanza points at the rogue itself; peers 1.. are the real cluster.
        let ports: Vec<Peer> = c
            .nodes
            .iter()
            .enumerate()
            .map(|(i, nd)| Peer {
                pod: nd.peer.pod.clone(),
                dns: nd.peer.dns.clone(),
                api: if i == 0 { free_port() } else { nd.peer.api },
                cluster: if i == 0 { free_port() } else { nd.peer.cluster },
            })
            .collect();
        let config = loopback_config(&ha, &ports, 0, &rogue_dir.join("tls"), &data);
        std::fs::write(rogue_dir.join("rogue.hcl"), config).unwrap();
        let log = rogue_dir.join("rogue.log");
        let out = std::fs::File::create(&log).unwrap();
        let mut rogue = Node {
            peer: ports.into_iter().next().unwrap(),
            child: Some(
                Command::new(tool("bao"))
                    .arg("server")
                    .arg(format!("-config={}", rogue_dir.join("rogue.hcl").display()))
                    .env_clear()
                    .env("HOME", &rogue_dir)
                    .env("BAO_RAFT_NODE_ID", "rogue")
                    .stdout(out.try_clone().unwrap())
                    .stderr(out)
                    .stdin(Stdio::null())
                    .spawn()
                    .expect("start the rogue bao server"),
            ),
            log: log.clone(),
        };
        let refused = c.wait("the rogue server's join to be refused by TLS verification", 30, || {
            let t = std::fs::read_to_string(&log).unwrap_or_default();
            t.lines()
                .find(|l| l.contains("certificate signed by unknown authority"))
                .map(str::to_string)
        });
        assert!(refused.contains("failed to verify certificate"), "{refused}");
        if let Some(ch) = rogue.child.as_mut() {
            let _ = ch.kill();
            let _ = ch.wait();
        }
        rogue.child = None;
        let v = c.json(leader, &root, &["operator", "raft", "list-peers", "-format=json"]);
        assert_eq!(
            v["data"]["config"]["servers"].as_array().map(Vec::len),
            Some(n),
            "the rogue server must not have joined"
        );
    }

    // 5. Acknowledged writes before the failure: certificates signed through every peer (a
    //    standby forwards to the leader) and key/value writes.
    c.bao_ok(leader, &root, &["secrets", "enable", "-path=acked", "kv"]);
    let mut acked: BTreeMap<String, String> = BTreeMap::new();
    let mut issued = Vec::new();
    for k in 0..12 {
        let via = k % n;
        let key = format!("acked/w{k}");
        c.bao_ok(via, &root, &["write", &key, &format!("v={k}-via-{via}")]);
        acked.insert(key, format!("{k}-via-{via}"));
        if k < n {
            issued.push(sign_as_cert_manager(&c, via, &sign_token, &r, work.path(), k));
        }
    }

    // 6. Kill the leader (SIGKILL: no graceful step-down).
    let old = c.leader(&root).expect("a leader before the failure");
    let killed_at = Instant::now();
    {
        let ch = c.nodes[old].child.as_mut().unwrap();
        ch.kill().unwrap();
        ch.wait().unwrap();
    }
    c.nodes[old].child = None;
    let new = c.wait("a new leader among the surviving peers", 60, || c.leader(&root));
    assert_ne!(new, old);
    let election = killed_at.elapsed();

    // 7. Signing still works, through the new leader and through the remaining standby; every
    //    acknowledged write is there, on every surviving peer.
    let now = time::OffsetDateTime::now_utc();
    let survivors: Vec<usize> = c.alive().collect();
    for (k, &i) in survivors.iter().enumerate() {
        issued.push(sign_as_cert_manager(&c, i, &sign_token, &r, work.path(), 100 + k));
    }
    let int_mount = script_var(&r.script, "INT_MOUNT");
    for &i in &survivors {
        for (key, val) in &acked {
            let got = c.bao_ok(i, &root, &["read", "-field=v", key]);
            assert_eq!(got.trim(), val, "{key} on {} after the failover", c.nodes[i].peer.pod);
        }
        for is in &issued {
            let stored = c.bao_ok(
                i,
                "",
                &["read", "-field=certificate", &format!("{int_mount}/cert/{}", is.serial)],
            );
            assert!(
                is.chain_pem.starts_with(stored.trim()),
                "certificate {} is stored as issued on {}",
                is.serial,
                c.nodes[i].peer.pod
            );
        }
    }
    for is in &issued {
        let name = r.certificates[0]["spec"]["dnsNames"][0].as_str().unwrap();
        pki::verify::verify_server(root_pem.as_bytes(), is.chain_pem.as_bytes(), &concrete(name), now)
            .unwrap_or_else(|e| panic!("certificate {} does not verify to the published root: {e}", is.serial));
    }
    eprintln!(
        "openbao raft: {n} peers, {} acknowledged writes and {} certificates survived; new leader {} elected {:.1}s after the leader was killed; test took {:.1}s",
        acked.len(),
        issued.len(),
        c.nodes[new].peer.pod,
        election.as_secs_f64(),
        t0.elapsed().as_secs_f64()
    );
}

// ------------------------------------------------------------------ the upgrade path

/// docs/openbao.md "From chart 0.23.2": the standalone server on file storage (the config rendered
/// with `openbao.mode=standalone`) is provisioned, stopped, migrated to raft with the documented
/// `bao operator migrate` configuration, and started as `openbao-0` of the rendered HA config:
/// same unseal keys, same root CA, steady-state provisioning and signing still work.
#[test]
fn openbao_upgrade_from_standalone_file_storage_keeps_the_pki() {
    let sa = release_spec_with("default", "openbao", &["--state-values-set", "openbao.mode=standalone"]);
    let sa_config = sa["values"][0]["server"]["standalone"]["config"]
        .as_str()
        .expect("server.standalone.config")
        .to_string();
    assert!(
        sa_config.contains("storage \"file\""),
        "standalone runs on file storage"
    );
    let ha = ha_values("default");
    let r = render_pki("default");
    let server_cert = object(&r.objects, "Certificate", "openbao-server-tls");
    let work = TempDir::new().unwrap();
    let tls = work.path().join("tls");
    bootstrap_tls(server_cert, &tls);
    let data = work.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let peers = peers(&ha);
    let (api, cluster) = (peers[0].api, peers[0].cluster);

    // 1. The old shape: standalone, file storage, the rendered config on loopback.
    let mut c = replace_n(&sa_config, TLS_DIR, &tls.display().to_string(), 2);
    c = replace_n(&c, DATA_DIR, &format!("\"{}\"", data.display()), 1);
    c = replace_n(&c, "\"[::]:8200\"", &format!("\"127.0.0.1:{api}\""), 1);
    c = replace_n(&c, "\"[::]:8201\"", &format!("\"127.0.0.1:{cluster}\""), 1);
    let file_cfg = work.path().join("standalone.hcl");
    std::fs::write(&file_cfg, c).unwrap();
    let log = work.path().join("standalone.log");
    let child = spawn(&file_cfg, &log, None, work.path());
    let mut cl = Cluster {
        nodes: vec![Node {
            peer: peers.into_iter().next().unwrap(),
            child: Some(child),
            log,
        }],
        tls: tls.clone(),
        home: TempDir::new().unwrap(),
    };
    cl.wait("the standalone server to answer", 30, || {
        (cl.bao(0, "", &["status"]).status.code() == Some(2)).then_some(())
    });
    let init = cl.json(
        0,
        "",
        &["operator", "init", "-key-shares=1", "-key-threshold=1", "-format=json"],
    );
    let key = init["unseal_keys_b64"][0].as_str().unwrap().to_string();
    let root = init["root_token"].as_str().unwrap().to_string();
    cl.bao_ok(0, "", &["operator", "unseal", &key]);
    let script = work.path().join("provision.sh");
    std::fs::write(&script, &r.script).unwrap();
    let provision = |cl: &Cluster, token: &str, steady: bool| {
        let mut cmd = cl.cmd(Path::new("bash"), 0, "openbao.openbao.svc", token);
        cmd.arg(&script).env("WAIT_SECONDS", "60");
        r.provision_env(&mut cmd, work.path());
        if steady {
            cmd.env("PROVISION_STEADY_STATE", "1");
        }
        let o = cmd.output().expect("run provision.sh");
        assert!(o.status.success(), "provision.sh failed:\n{}", out_text(&o));
        o.stdout
    };
    let root_before = provision(&cl, &root, false);
    {
        let ch = cl.nodes[0].child.as_mut().unwrap();
        ch.kill().unwrap();
        ch.wait().unwrap();
    }
    cl.nodes[0].child = None;

    // 2. Offline migration, as documented (same directory: the file backend's core/ logical/
    //    sys/ and raft's raft/ vault.db do not overlap).
    let migrate = work.path().join("migrate.hcl");
    std::fs::write(
        &migrate,
        format!(
            "storage_source \"file\" {{ path = \"{d}\" }}\nstorage_destination \"raft\" {{\n  path = \"{d}\"\n  \
             node_id = \"openbao-0\"\n}}\ncluster_addr = \"https://127.0.0.1:{cluster}\"\n",
            d = data.display()
        ),
    )
    .unwrap();
    let o = Command::new(tool("bao"))
        .args(["operator", "migrate", "-config"])
        .arg(&migrate)
        .env_clear()
        .env("HOME", work.path())
        .output()
        .expect("run bao operator migrate");
    assert!(o.status.success(), "bao operator migrate failed:\n{}", out_text(&o));

    // 3. The HA shape: openbao-0 of the rendered raft config on the migrated data, same keys.
    let all_peers = self::peers(&ha);
    let mut ports = all_peers;
    ports[0].api = api;
    ports[0].cluster = cluster;
    let ha_cfg = work.path().join("openbao-0.hcl");
    std::fs::write(&ha_cfg, loopback_config(&ha, &ports, 0, &tls, &data)).unwrap();
    let log = work.path().join("openbao-0.log");
    cl.nodes[0].child = Some(spawn(&ha_cfg, &log, Some("openbao-0"), work.path()));
    cl.nodes[0].log = log;
    cl.wait("openbao-0 (raft) to answer", 30, || {
        let v: Value = serde_json::from_slice(&cl.bao(0, "", &["status", "-format=json"]).stdout).ok()?;
        (v["storage_type"] == "raft" && v["initialized"] == true).then_some(())
    });
    cl.bao_ok(0, "", &["operator", "unseal", &key]);
    cl.wait("openbao-0 to lead the migrated cluster", 30, || cl.leader(&root));
    let v = cl.json(0, &root, &["operator", "raft", "list-peers", "-format=json"]);
    assert_eq!(v["data"]["config"]["servers"][0]["node_id"], "openbao-0");

    // Same root; the provisioner's steady-state identity and cert-manager's signing still work.
    let prov_token = cl
        .bao_ok(
            0,
            &root,
            &[
                "token",
                "create",
                "-policy",
                &script_var(&r.script, "PROV_POLICY_NAME"),
                "-field",
                "token",
            ],
        )
        .trim()
        .to_string();
    let root_after = provision(&cl, &prov_token, true);
    assert_eq!(
        pki::fingerprint::bundle_fingerprint(&root_before).unwrap(),
        pki::fingerprint::bundle_fingerprint(&root_after).unwrap(),
        "the migration changed the root CA"
    );
    let sign_token = cl
        .bao_ok(
            0,
            &root,
            &[
                "token",
                "create",
                "-policy",
                &script_var(&r.script, "SIGN_POLICY_NAME"),
                "-field",
                "token",
            ],
        )
        .trim()
        .to_string();
    let issued = sign_as_cert_manager(&cl, 0, &sign_token, &r, work.path(), 0);
    let name = r.certificates[0]["spec"]["dnsNames"][0].as_str().unwrap();
    pki::verify::verify_server(
        &root_after,
        issued.chain_pem.as_bytes(),
        &concrete(name),
        time::OffsetDateTime::now_utc(),
    )
    .unwrap_or_else(|e| panic!("a certificate signed after the migration does not verify: {e}"));
}
