package render

import (
	"slices"
	"text/template/parse"
)

// Reads is what a template reads, taken from its parse tree (never from
// its text: a comment or a string naming a field reads nothing): the
// fields of its data (".Hardware.CPUVendors" as ["Hardware", "CPUVendors"])
// and the functions it calls. A field read whole (".Hardware", or the
// data itself, ".") reads everything under it.
type Reads struct {
	// Fields are the field chains read from the template's data; a chain
	// of one reads that field whole, an empty chain the whole data.
	Fields [][]string
	// Funcs are the functions called, by name.
	Funcs map[string]bool
	// HCOPaths are the paths into the HCO read by dig with constant keys
	// (dig "spec" "x" default .HCO); a read of .HCO any other way is a
	// field read of it whole (Fields).
	HCOPaths [][]string
	// Args are, per function, the arguments of its calls whose arguments
	// are all constant strings (switch "enable-x": ["enable-x"]); a call
	// with another argument is not listed.
	Args map[string][][]string
}

// Field reports whether the template may read the data field named by
// path: a chain it reads that is a prefix of path (the field read whole)
// or that path is a prefix of (a field under it).
func (r Reads) Field(path ...string) bool {
	for _, f := range r.Fields {
		n := min(len(f), len(path))
		if slices.Equal(f[:n], path[:n]) {
			return true
		}
	}
	return false
}

// Under returns the names of the fields read directly under top
// (["Hardware"] → "CPUVendors", ...), and whole when top is read whole.
func (r Reads) Under(top string) (names []string, whole bool) {
	for _, f := range r.Fields {
		switch {
		case len(f) == 0 || (len(f) == 1 && f[0] == top):
			whole = true
		case f[0] == top:
			if !slices.Contains(names, f[1]) {
				names = append(names, f[1])
			}
		}
	}
	slices.Sort(names)
	return names, whole
}

// ReadsOf returns what the template at path reads; a template that cannot
// be parsed reads everything (an unknown never reads as nothing).
func (r *Renderer) ReadsOf(path string) Reads {
	if v, ok := r.reads.Load(path); ok {
		return v.(Reads)
	}
	w := r.readsOf(path)
	r.reads.Store(path, w)
	return w
}

func (r *Renderer) readsOf(path string) Reads {
	s := r.take()
	defer r.give(s)
	t, err := r.template(s, path)
	if err != nil || t.Tree == nil {
		return Reads{Fields: [][]string{{}}, Funcs: map[string]bool{}}
	}
	w := Reads{Funcs: map[string]bool{}}
	w.node(t.Root, true)
	return w
}

// node walks n; root says whether dot is the template's data there (a
// with or range rebinds it: a field read under it is relative to what
// rebinding it read, which is recorded already).
func (w *Reads) node(n parse.Node, root bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			w.node(c, root)
		}
	case *parse.ActionNode:
		w.node(n.Pipe, root)
	case *parse.IfNode:
		w.branch(&n.BranchNode, root, root)
	case *parse.WithNode:
		w.branch(&n.BranchNode, root, false)
	case *parse.RangeNode:
		w.branch(&n.BranchNode, root, false)
	case *parse.TemplateNode:
		w.node(n.Pipe, root)
	case *parse.PipeNode:
		if n == nil {
			return
		}
		for _, c := range n.Cmds {
			w.node(c, root)
		}
	case *parse.CommandNode:
		if path, ok := digHCO(n, root); ok {
			w.Funcs["dig"] = true
			w.HCOPaths = append(w.HCOPaths, path)
			for _, a := range n.Args[1 : len(n.Args)-1] {
				w.node(a, root) // the default may read something too
			}
			return
		}
		if id, ok := n.Args[0].(*parse.IdentifierNode); ok && len(n.Args) > 1 {
			if args, ok := constants(n.Args[1:]); ok {
				if w.Args == nil {
					w.Args = map[string][][]string{}
				}
				w.Args[id.Ident] = append(w.Args[id.Ident], args)
			}
		}
		for _, a := range n.Args {
			w.node(a, root)
		}
	case *parse.IdentifierNode:
		w.Funcs[n.Ident] = true
	case *parse.FieldNode:
		if root {
			w.Fields = append(w.Fields, slices.Clone(n.Ident))
		}
	case *parse.VariableNode:
		// $ is the data wherever dot was rebound: $.Hardware.X.
		if len(n.Ident) > 0 && n.Ident[0] == "$" {
			w.Fields = append(w.Fields, slices.Clone(n.Ident[1:]))
		}
	case *parse.DotNode:
		if root {
			w.Fields = append(w.Fields, []string{}) // the data itself, passed on
		}
	case *parse.ChainNode:
		// (expr).Field: the fields are of what expr returns, which is
		// recorded by walking expr.
		w.node(n.Node, root)
	}
}

// branch walks an if, with or range: its pipeline in the outer dot, its
// body in dot (rebound by with and range), its else in the outer dot.
func (w *Reads) branch(b *parse.BranchNode, root, bodyRoot bool) {
	w.node(b.Pipe, root)
	w.node(b.List, bodyRoot)
	w.node(b.ElseList, root)
}

// digHCO reads sprig's dig into the template's .HCO with constant keys
// (dig "k1" "k2" default .HCO): the path it reads.
func digHCO(n *parse.CommandNode, root bool) ([]string, bool) {
	if !root || len(n.Args) < 4 {
		return nil, false
	}
	if id, ok := n.Args[0].(*parse.IdentifierNode); !ok || id.Ident != "dig" {
		return nil, false
	}
	if f, ok := n.Args[len(n.Args)-1].(*parse.FieldNode); !ok || !slices.Equal(f.Ident, []string{"HCO"}) {
		return nil, false
	}
	var path []string
	for _, a := range n.Args[1 : len(n.Args)-2] {
		s, ok := a.(*parse.StringNode)
		if !ok {
			return nil, false
		}
		path = append(path, s.Text)
	}
	return path, true
}

// constants are the texts of args when every one is a constant string.
func constants(args []parse.Node) ([]string, bool) {
	out := make([]string, 0, len(args))
	for _, a := range args {
		s, ok := a.(*parse.StringNode)
		if !ok {
			return nil, false
		}
		out = append(out, s.Text)
	}
	return out, true
}
