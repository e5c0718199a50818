package policy

/*
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

// The few declarations of tree-sitter's C API (tree_sitter/api.h, 0.25)
// this file uses: github.com/tree-sitter/go-tree-sitter links the library
// into the binary. TSNode and TSTreeCursor are returned by value, so
// their layout is the header's; TestTSTreeAsBindings holds every node
// of a tree to the bindings' answers.
typedef struct TSParser TSParser;
typedef struct TSTree TSTree;
typedef struct TSLanguage TSLanguage;
typedef struct { uint32_t context[4]; const void *id; const TSTree *tree; } TSNode;
typedef struct { const void *tree; const void *id; uint32_t context[3]; } TSTreeCursor;

extern TSParser *ts_parser_new(void);
extern void ts_parser_delete(TSParser *);
extern bool ts_parser_set_language(TSParser *, const TSLanguage *);
extern void ts_parser_set_timeout_micros(TSParser *, uint64_t);
extern TSTree *ts_parser_parse_string(TSParser *, const TSTree *, const char *, uint32_t);
extern void ts_tree_delete(TSTree *);
extern TSNode ts_tree_root_node(const TSTree *);
extern uint32_t ts_node_descendant_count(TSNode);
extern uint16_t ts_node_symbol(TSNode);
extern uint32_t ts_node_start_byte(TSNode);
extern uint32_t ts_node_end_byte(TSNode);
extern bool ts_node_is_named(TSNode);
extern bool ts_node_has_error(TSNode);
extern TSTreeCursor ts_tree_cursor_new(TSNode);
extern void ts_tree_cursor_delete(TSTreeCursor *);
extern TSNode ts_tree_cursor_current_node(const TSTreeCursor *);
extern uint16_t ts_tree_cursor_current_field_id(const TSTreeCursor *);
extern bool ts_tree_cursor_goto_first_child(TSTreeCursor *);
extern bool ts_tree_cursor_goto_next_sibling(TSTreeCursor *);
extern bool ts_tree_cursor_goto_parent(TSTreeCursor *);

#define TG_SYM_ERROR ((uint16_t)-1) // ts_builtin_sym_error

typedef struct {
	uint32_t start, end;
	int32_t parent;
	uint16_t symbol, field;
	uint8_t named, error;
} tg_node;

// tg_parse parses src and returns its tree (NULL if the parser gave
// none, or gave up after timeout microseconds) and, in *count, the
// number of nodes tg_flatten will write.
static TSTree *tg_parse(const void *lang, const char *src, uint32_t len, uint64_t timeout, uint32_t *count) {
	*count = 0;
	TSParser *p = ts_parser_new();
	if (p == NULL) return NULL;
	// Deprecated in 0.25 for a progress callback, and still there: a
	// build against a library without it fails to link, not to stop.
	ts_parser_set_timeout_micros(p, timeout);
	TSTree *t = NULL;
	if (ts_parser_set_language(p, (const TSLanguage *)lang)) t = ts_parser_parse_string(p, NULL, src, len);
	ts_parser_delete(p);
	if (t != NULL) *count = ts_node_descendant_count(ts_tree_root_node(t));
	return t;
}

// tg_flatten writes up to cap nodes of t in preorder, each with its
// parent's index and the field it fills there, deletes t and returns how
// many it wrote.
static uint32_t tg_flatten(TSTree *t, tg_node *out, uint32_t cap) {
	TSTreeCursor c = ts_tree_cursor_new(ts_tree_root_node(t));
	uint32_t n = 0;
	int32_t parent = -1;
	for (;;) {
		if (n == cap) break;
		TSNode x = ts_tree_cursor_current_node(&c);
		tg_node *o = &out[n];
		o->start = ts_node_start_byte(x);
		o->end = ts_node_end_byte(x);
		o->parent = parent;
		o->symbol = ts_node_symbol(x);
		// A child of an error node fills no field, as
		// ts_node_child_by_field_id answers (the cursor reports the field
		// a hidden node inside the error gave it).
		o->field = parent >= 0 && out[parent].symbol == TG_SYM_ERROR ? 0 : ts_tree_cursor_current_field_id(&c);
		o->named = ts_node_is_named(x);
		o->error = ts_node_has_error(x);
		if (ts_tree_cursor_goto_first_child(&c)) {
			parent = (int32_t)n;
			n++;
			continue;
		}
		n++;
		// Up to the first ancestor with a next sibling.
		while (!ts_tree_cursor_goto_next_sibling(&c)) {
			if (!ts_tree_cursor_goto_parent(&c)) goto done;
			parent = out[parent].parent;
		}
	}
done:
	ts_tree_cursor_delete(&c);
	ts_tree_delete(t);
	return n;
}

static void tg_tree_delete(TSTree *t) { ts_tree_delete(t); }
*/
import "C"

import (
	"time"
	"unsafe"
)

// tsTree is a tree-sitter syntax tree copied out of C in one call: a
// walk that asks the bindings for each node's kind, children and fields
// makes one call into C per question, which cost Python code twice its
// parse. Its nodes answer the same questions in Go, with the bindings'
// method names.
type tsTree struct {
	nodes []tsNode
	kids  []*tsNode // each node's children, in order, contiguous
	named []*tsNode // each node's named children, in order, contiguous
}

// tsNode is one node of a tsTree. A nil *tsNode is the bindings' null
// node: each method of a node that has no such child returns nil.
type tsNode struct {
	start, end    uint32
	kind, field   uint16
	isNamed, err  bool
	kids, nkids   int32 // kids[kids:kids+nkids] of the tree
	named, nnamed int32 // named[named:named+nnamed] of the tree
	tree          *tsTree
}

// parseTimeout bounds one parse. tree-sitter parses Python at about 2
// MB/s here, so the longest code analysed (maxCode) takes some 30 ms;
// but some input makes its error recovery take seconds (64 KiB of
// "x\x00y" took 12 s), and a decision must not wait on it.
const parseTimeout = 250 * time.Millisecond

// parseTS parses src with the grammar lang and copies the tree out, or
// returns nil if the parser gives none or gives up after parseTimeout.
func parseTS(lang unsafe.Pointer, src string) *tsTree {
	if len(src) == 0 {
		src = "\n" // the empty program, with a byte to point at
	}
	// The parser reads the Go string in place: it keeps nothing of it
	// once the call returns.
	var count C.uint32_t
	t := C.tg_parse(lang, (*C.char)(unsafe.Pointer(unsafe.StringData(src))), C.uint32_t(len(src)),
		C.uint64_t(parseTimeout.Microseconds()), &count)
	if t == nil {
		return nil
	}
	if count == 0 {
		C.tg_tree_delete(t)
		return nil
	}
	flat := make([]C.tg_node, int(count))
	if n := C.tg_flatten(t, &flat[0], count); n != count {
		return nil // a tree cut short would hide the calls in the rest
	}
	return newTSTree(flat)
}

// newTSTree links the flat nodes' children: children follow their parent
// in preorder, so a count per parent and one pass place them.
func newTSTree(flat []C.tg_node) *tsTree {
	tr := &tsTree{nodes: make([]tsNode, len(flat))}
	var kids, named int32
	for i := range flat {
		f := &flat[i]
		tr.nodes[i] = tsNode{start: uint32(f.start), end: uint32(f.end), kind: uint16(f.symbol), field: uint16(f.field),
			isNamed: f.named != 0, err: f.error != 0, tree: tr}
		if p := int(f.parent); p >= 0 && p < i {
			tr.nodes[p].nkids++
			kids++
			if f.named != 0 {
				tr.nodes[p].nnamed++
				named++
			}
		}
	}
	var k, m int32
	for i := range tr.nodes {
		x := &tr.nodes[i]
		x.kids, x.named = k, m
		k += x.nkids
		m += x.nnamed
		x.nkids, x.nnamed = 0, 0 // counted again as they are placed
	}
	tr.kids, tr.named = make([]*tsNode, kids), make([]*tsNode, named)
	for i := range flat {
		p := int(flat[i].parent)
		if p < 0 || p >= i {
			continue
		}
		x, c := &tr.nodes[p], &tr.nodes[i]
		tr.kids[x.kids+x.nkids] = c
		x.nkids++
		if c.isNamed {
			tr.named[x.named+x.nnamed] = c
			x.nnamed++
		}
	}
	return tr
}

// root is the tree's root node.
func (t *tsTree) root() *tsNode {
	if t == nil || len(t.nodes) == 0 {
		return nil
	}
	return &t.nodes[0]
}

// KindId is the node's symbol (ts_node_symbol).
func (n *tsNode) KindId() uint16 { return n.kind }

// StartByte and EndByte are the node's span in the source.
func (n *tsNode) StartByte() uint { return uint(n.start) }
func (n *tsNode) EndByte() uint   { return uint(n.end) }

// HasError reports whether the node is or holds a syntax error.
func (n *tsNode) HasError() bool { return n.err }

// ChildCount and Child are the node's children, named or not.
func (n *tsNode) ChildCount() uint { return uint(n.nkids) }

func (n *tsNode) Child(i uint) *tsNode {
	if i >= uint(n.nkids) {
		return nil
	}
	return n.tree.kids[uint(n.kids)+i]
}

// NamedChildCount and NamedChild are the node's named children.
func (n *tsNode) NamedChildCount() uint { return uint(n.nnamed) }

func (n *tsNode) NamedChild(i uint) *tsNode {
	if i >= uint(n.nnamed) {
		return nil
	}
	return n.tree.named[uint(n.named)+i]
}

// ChildByFieldId is the node's first child in the field, or nil.
func (n *tsNode) ChildByFieldId(field uint16) *tsNode {
	if field == 0 {
		return nil
	}
	for _, c := range n.tree.kids[n.kids : n.kids+n.nkids] {
		if c.field == field {
			return c
		}
	}
	return nil
}
