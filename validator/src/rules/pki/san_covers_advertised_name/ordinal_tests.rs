//! `judged_ordinals` against the mutants the rule tests let through (issue 31; ci/mutants).

use super::*;

/// Digits in a SAN that name an ordinal at or beyond the replica count name no pod: 100 replicas
/// and a SAN mentioning 250 judge 0, 2, 5, 25 and 50 one by one (the digit runs of `250` below
/// 100), one generic ordinal per digit count for the rest, and never 250.
#[test]
fn ordinals_mentioned_beyond_the_replicas_are_not_judged() {
    let sans = vec!["request-router-250.request-router-headless".to_string()];
    let j = judged_ordinals(100, &sans);
    assert_eq!(j, vec![(0, 1), (1, 7), (2, 1), (5, 1), (10, 88), (25, 1), (50, 1)]);
    assert_eq!(j.iter().map(|(_, n)| n).sum::<u64>(), 100);
    // With 251 replicas, 250 is a pod and is judged by its own name.
    let j = judged_ordinals(251, &sans);
    assert!(j.contains(&(250, 1)), "{j:?}");
    assert_eq!(j.iter().map(|(_, n)| n).sum::<u64>(), 251);
}
