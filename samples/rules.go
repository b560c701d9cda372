package samples

import "github.com/kidscope/kidscope/rules"

// LookupRule returns a rule as package rules declares it (its severity,
// group, precedence, whether its findings are about the broker's answer
// or decide a verdict): a rule is declared once, and the samples read it
// from there. What each scenario must report is the samples' own, written
// by hand in the scenarios' Finds: a second opinion on the rules engine.
func LookupRule(id string) (rules.Rule, bool) { return rules.Lookup(id) }
