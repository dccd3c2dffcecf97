package main

import (
	"fmt"
	"strings"

	"github.com/kubevirt/virt-platform-autopilot/pkg/annotations"
)

const (
	beginAnnotations = "<!-- BEGIN GENERATED ANNOTATIONS (make generate) -->"
	endAnnotations   = "<!-- END GENERATED ANNOTATIONS -->"
)

// annotationTable is docs/annotations.md's table: every annotation, where
// it goes, what it does and what its parser accepts.
func annotationTable() string {
	var b strings.Builder
	b.WriteString("| Annotation | On | What it does | Accepted |\n|---|---|---|---|\n")
	for _, e := range annotations.Reference {
		acc := e.Accepted
		if acc == "" {
			acc = "written by the autopilot"
		}
		fmt.Fprintf(&b, "| [`%s`](#%s) | %s | %s | %s |\n", e.Key, e.Anchor, e.On, e.Summary, strings.ReplaceAll(acc, "|", "\\|"))
	}
	return b.String()
}

// annotationList is README's list: one line each, linked to the details.
func annotationList() string {
	var b strings.Builder
	on := ""
	for _, e := range annotations.Reference {
		if e.On != on {
			on = e.On
			fmt.Fprintf(&b, "\n%s:\n\n", map[string]string{"HCO": "On the HCO", "any managed object": "On any managed object (the HCO included)", "written by the autopilot": "Written by the autopilot"}[on])
		}
		fmt.Fprintf(&b, "- [`%s`](docs/annotations.md#%s): %s\n", e.Key, e.Anchor, e.Summary)
	}
	return strings.TrimPrefix(b.String(), "\n") + "\n"
}
