//! Findings: what a rule reports. Severities, waivers and overrides are applied later, in one
//! place (`sink`); rules only say what they found and where.

use crate::graph::Object;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Note,
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct ObjectRef {
    #[serde(rename = "apiVersion")]
    pub api_version: String,
    pub kind: String,
    pub namespace: Option<String>,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct SourceRef {
    /// Repository-relative path where possible.
    pub file: String,
    pub line: Option<usize>,
}

/// Another place where the same root cause shows (the address a client dials at a server whose
/// configuration turns TLS off): reported inside the one finding, not as a finding of its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Related {
    pub object: Option<ObjectRef>,
    pub source: Option<SourceRef>,
    pub message: String,
}

/// What a finding is one instance of (the `fold` module groups by it): findings of one rule, environment,
/// severity and waiver with the same cause key are reported once, the others becoming related
/// locations of the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Opaque to everything but the rule that set it (`listener:ConfigMap/openbao/openbao-config`).
    pub key: String,
    /// Where the cause itself is written when it is no instance's own location (a `helmDefaults`
    /// setting every release of a state file inherits): the folded finding points there with this
    /// message, and every instance becomes a related location.
    pub at: Option<(SourceRef, String)>,
}

/// One finding. `severity` is `None` until the sink assigns the rule's (possibly overridden)
/// severity; a rule may set it to report below its default (e.g. a warning-level variant).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Option<Severity>,
    pub environment: Option<String>,
    /// `namespace/name` of the release.
    pub release: Option<String>,
    pub object: Option<ObjectRef>,
    pub source: Option<SourceRef>,
    pub message: String,
    pub help: Option<String>,
    /// The matching waiver's reason.
    pub waived: Option<String>,
    /// Other locations of the same root cause (one cause, one finding).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub related: Vec<Related>,
    /// The root cause, for folding (never reported).
    #[serde(skip)]
    pub cause: Option<Cause>,
    /// Neither a waiver nor a lowering override applies to this finding, although its rule may
    /// be waived (a static token the workload cannot run without, beside optional ones that may).
    #[serde(skip)]
    pub unwaivable: bool,
}

impl Finding {
    /// A finding about nothing in particular (rare; prefer the constructors below).
    pub fn new(rule: &'static str, message: impl Into<String>) -> Finding {
        Finding {
            rule,
            severity: None,
            environment: None,
            release: None,
            object: None,
            source: None,
            message: message.into(),
            help: None,
            waived: None,
            related: Vec::new(),
            cause: None,
            unwaivable: false,
        }
    }

    /// A finding about a rendered object: environment, release, object and source come from its
    /// provenance; the line is the object's own.
    pub fn object(rule: &'static str, obj: &Object, message: impl Into<String>) -> Finding {
        let mut f = Finding::new(rule, message);
        f.environment = Some(obj.prov.environment.clone()).filter(|e| !e.is_empty());
        f.release = obj.prov.release.clone();
        f.object = Some(ObjectRef {
            api_version: obj.api_version.clone(),
            kind: obj.kind.clone(),
            namespace: obj.namespace.clone(),
            name: obj.name.clone(),
        });
        f.source = obj.prov.file.clone().map(|file| SourceRef {
            file,
            line: obj.prov.line,
        });
        f
    }

    /// Like `object`, pointing at the template line that contains `needle` when it can be found.
    pub fn object_at(rule: &'static str, obj: &Object, needle: &str, message: impl Into<String>) -> Finding {
        let mut f = Finding::object(rule, obj, message);
        if let Some(src) = f.source.as_mut() {
            src.line = obj.line_of(needle);
        }
        f
    }

    /// A finding about the helmfile state (a release or a state file line).
    pub fn state(
        rule: &'static str,
        environment: Option<&str>,
        release: Option<String>,
        file: &str,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Finding {
        let mut f = Finding::new(rule, message);
        f.environment = environment.map(str::to_string);
        f.release = release;
        f.source = Some(SourceRef {
            file: file.to_string(),
            line,
        });
        f
    }

    /// Fold other findings of the same root cause into this one as related locations.
    pub fn with_related(mut self, others: impl IntoIterator<Item = Finding>) -> Finding {
        for o in others {
            self.related.push(Related {
                object: o.object,
                source: o.source,
                message: o.message,
            });
            self.related.extend(o.related);
        }
        self
    }

    /// Mark the root cause this finding is an instance of (the `fold` module groups by it).
    pub fn with_cause(mut self, key: impl Into<String>) -> Finding {
        self.cause = Some(Cause {
            key: key.into(),
            at: None,
        });
        self
    }

    /// Like `with_cause`, for a cause written at its own place (`file:line`, described by
    /// `message`): the folded finding points there.
    pub fn with_cause_at(
        mut self,
        key: impl Into<String>,
        file: &str,
        line: Option<usize>,
        message: impl Into<String>,
    ) -> Finding {
        self.cause = Some(Cause {
            key: key.into(),
            at: Some((
                SourceRef {
                    file: file.to_string(),
                    line,
                },
                message.into(),
            )),
        });
        self
    }

    /// See `unwaivable`.
    pub fn unwaivable(mut self) -> Finding {
        self.unwaivable = true;
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Finding {
        self.help = Some(help.into());
        self
    }

    pub fn with_severity(mut self, s: Severity) -> Finding {
        self.severity = Some(s);
        self
    }

    pub fn with_environment(mut self, env: &str) -> Finding {
        self.environment = Some(env.to_string());
        self
    }

    /// The severity after the sink has run (errors until then).
    pub fn sev(&self) -> Severity {
        self.severity.unwrap_or(Severity::Error)
    }
}
