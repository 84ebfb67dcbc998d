//! `image-pinned`: every container image has an exact tag (and a digest where required) from an allowed registry.

use super::*;
use crate::meaning::tags::Tag;

/// A parsed image reference.
#[derive(Debug, PartialEq, Eq)]
struct ImageRef {
    /// Registry host, Docker Hub aliases folded to `docker.io`.
    registry: String,
    /// Repository path (`library/nginx`).
    path: String,
    tag: Option<String>,
    digest: Option<String>,
}

impl ImageRef {
    fn full_name(&self) -> String {
        format!("{}/{}", self.registry, self.path)
    }
}

fn docker_hub(host: &str) -> bool {
    matches!(
        host.to_ascii_lowercase().as_str(),
        "docker.io" | "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com"
    )
}

fn parse_image(s: &str) -> Result<ImageRef, String> {
    let s = s.trim();
    if s.is_empty() || s.contains(char::is_whitespace) {
        return Err("is not a valid image reference".into());
    }
    let (name_tag, digest) = match s.split_once('@') {
        Some((n, d)) => (n, Some(d.to_string())),
        None => (s, None),
    };
    let last = name_tag.rsplit('/').next().unwrap_or(name_tag);
    let (name, tag) = match last.rsplit_once(':') {
        Some((_, t)) => (&name_tag[..name_tag.len() - t.len() - 1], Some(t.to_string())),
        None => (name_tag, None),
    };
    let (registry, path) = match name.split_once('/') {
        Some((first, rest)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            if docker_hub(first) {
                (
                    "docker.io".to_string(),
                    if rest.contains('/') {
                        rest.to_string()
                    } else {
                        format!("library/{rest}")
                    },
                )
            } else {
                (first.to_ascii_lowercase(), rest.to_string())
            }
        }
        Some(_) => ("docker.io".to_string(), name.to_string()),
        None => ("docker.io".to_string(), format!("library/{name}")),
    };
    if path.is_empty() || tag.as_deref() == Some("") {
        return Err("is not a valid image reference".into());
    }
    Ok(ImageRef {
        registry,
        path,
        tag,
        digest,
    })
}

fn valid_digest(d: &str) -> bool {
    let hex = |h: &str, n: usize| h.len() == n && h.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    match d.split_once(':') {
        Some(("sha256", h)) => hex(h, 64),
        Some(("sha512", h)) => hex(h, 128),
        _ => false,
    }
}

pub(super) fn image_pinned(ctx: &Ctx) -> Vec<Finding> {
    let settings = &ctx.policy.settings;
    let need_digest = settings.digests_required(ctx.environment);
    // Validated when the policy was loaded; a shape that does not compile here is not used.
    let shape = settings
        .image_version_tag
        .as_deref()
        .and_then(|s| crate::meaning::tags::compile_shape(s).ok());
    let mut out = crate::rules::unreadable_spec_patches(ctx, IMAGE_PINNED, "images");
    for obj in ctx.graph.objects.iter().filter(|o| !o.prov.external) {
        for (list, c) in obj.containers() {
            let cname = c.get("name").and_then(Value::as_str).unwrap_or("?");
            let who = format!("{}: {list}[{cname}]", obj.display());
            let Some(image) = c.get("image").and_then(Value::as_str) else {
                // An entry of a pod spec patch held as text (Argo's `podSpecPatch`) is merged by
                // name into the container it patches, which keeps its own image.
                if obj.in_spec_patch(c) {
                    continue;
                }
                // A value the kind's CRD types as a container: in a list its schema says is merged
                // by name into the operator's own containers, a patch that keeps their image; in a
                // pod spec, a container that starts without one; otherwise its image is the
                // operator's choice, which the gate cannot judge (fail closed).
                let at = |p: &String| obj.at(p).is_some_and(|v| std::ptr::eq(v, c));
                if obj.schema_patches.iter().any(at) {
                    continue;
                }
                let in_pod_spec = obj.found_pod_specs().any(|(_, spec)| {
                    crate::pod_shape::POD_LISTS.iter().any(|l| {
                        spec.get(*l)
                            .and_then(Value::as_array)
                            .is_some_and(|items| items.iter().any(|x| std::ptr::eq(x, c)))
                    })
                });
                let typed = !in_pod_spec && obj.schema_containers.iter().flatten().any(|(p, _)| at(p));
                let (message, help) = if typed {
                    (
                        format!("{who} is a container its CustomResourceDefinition types as one, with no image: the operator chooses it, so its pinning cannot be judged"),
                        "set the container's image with an exact tag (or a digest) in the object",
                    )
                } else {
                    (format!("{who} has no image"), "set an image with an exact tag")
                };
                out.push(Finding::object(IMAGE_PINNED, obj, message).with_help(help));
                continue;
            };
            let mut problems = Vec::new();
            match parse_image(image) {
                Err(e) => problems.push(e),
                Ok(r) => {
                    match (&r.digest, r.tag.as_deref()) {
                        (Some(d), _) if !valid_digest(d) => problems.push(format!("has a malformed digest `{d}`")),
                        (Some(_), _) => {}
                        (None, None) => problems.push("has no tag (the runtime pulls `latest`)".to_string()),
                        (None, Some(_)) => {}
                    }
                    // Without a digest the tag must name a version (`crate::meaning::tags`); a
                    // digest pins a moving tag, but a development build pinned is still one.
                    if let Some(t) = r.tag.as_deref() {
                        match crate::meaning::tags::classify(t, shape.as_ref()) {
                            Tag::Moving if r.digest.is_none() => problems.push(format!(
                                "uses the moving tag `{t}`: it names no version{}, so the registry can move it to \
                                 another image",
                                if shape.is_some() {
                                    " (settings.imageVersionTag)"
                                } else {
                                    ""
                                }
                            )),
                            Tag::Development(w) => {
                                problems.push(format!("uses a snapshot/development tag (`{w}` in `{t}`)"))
                            }
                            _ => {}
                        }
                    }
                    if need_digest && r.digest.is_none() {
                        problems.push(format!(
                            "has no @sha256 digest, which the policy requires in environment {}",
                            ctx.environment
                        ));
                    }
                    let list = &settings.allowed_image_registries;
                    let full = r.full_name();
                    let ok = crate::policy::allow_list_admits(list, |e| {
                        let e = e.trim().trim_end_matches('/').to_ascii_lowercase();
                        let e = match e.split_once('/') {
                            Some((h, rest)) if docker_hub(h) => format!("docker.io/{rest}"),
                            _ if docker_hub(&e) => "docker.io".to_string(),
                            _ => e,
                        };
                        !e.is_empty() && (full == e || full.starts_with(&format!("{e}/")))
                    });
                    if !ok {
                        problems.push(format!(
                            "comes from {} ({full}), which is not in the policy's allowedImageRegistries",
                            r.registry
                        ));
                    }
                }
            }
            for p in problems {
                out.push(
                    Finding::object_at(IMAGE_PINNED, obj, image, format!("{who} image `{image}` {p}"))
                        .with_help("use an exact released tag from an allowed registry, with an @sha256 digest where the policy requires one"),
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn image_references() {
        let p = |s: &str| parse_image(s).map(|r| (r.full_name(), r.tag, r.digest));
        assert_eq!(p("nginx"), Ok(("docker.io/library/nginx".into(), None, None)));
        assert_eq!(
            p("nginx:1.27"),
            Ok(("docker.io/library/nginx".into(), Some("1.27".into()), None))
        );
        assert_eq!(
            p("bitnami/redis:7.2"),
            Ok(("docker.io/bitnami/redis".into(), Some("7.2".into()), None))
        );
        assert_eq!(
            p("index.docker.io/nginx:1"),
            Ok(("docker.io/library/nginx".into(), Some("1".into()), None))
        );
        assert_eq!(p("localhost:5000/app"), Ok(("localhost:5000/app".into(), None, None)));
        assert_eq!(
            p("localhost/app:1"),
            Ok(("localhost/app".into(), Some("1".into()), None))
        );
        assert_eq!(
            p("Quay.io/a/b:1@sha256:x"),
            Ok(("quay.io/a/b".into(), Some("1".into()), Some("sha256:x".into())))
        );
        assert!(parse_image("").is_err() && parse_image("nginx:").is_err() && parse_image("a b").is_err());
        let tag = |t: &str| crate::meaning::tags::classify(t, None);
        assert_eq!(tag("1.5.0-SNAPSHOT"), Tag::Development("snapshot".into()));
        assert_eq!(
            tag("nightly-2026-11-01"),
            Tag::Moving,
            "a date with dashes is not a version shape"
        );
        assert_eq!(tag("120.0-headless"), Tag::Version);
        assert_eq!(tag("3.1-maintenance"), Tag::Version);
    }
}
