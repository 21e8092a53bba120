/* The filter grammar, see where.h: a recursive-descent parser over the
 * text, building the core's condition tree leaf by leaf. */
#include "where_parse.h"
#include "tfs_render.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "tfs_alloc.h"

static void skip_space(struct wp *p)
{
	while (p->pos < p->len && isspace((unsigned char)p->text[p->pos]))
		p->pos++;
}

static bool at_end(struct wp *p)
{
	skip_space(p);
	return p->pos >= p->len;
}

static char peek(struct wp *p)
{
	skip_space(p);
	return p->pos < p->len ? p->text[p->pos] : '\0';
}

static bool ident_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == '-' ||
	       c == '$' || c == ':' || c == '+' || (unsigned char)c >= 0x80;
}

/* Length of the bare word at the current position (no skipping). */
static size_t word_len(struct wp *p)
{
	size_t n = 0;

	while (p->pos + n < p->len && ident_char(p->text[p->pos + n]))
		n++;
	return n;
}

/* Consumes keyword kw (case-insensitive, as a whole word). */
static bool keyword(struct wp *p, const char *kw)
{
	size_t n;

	skip_space(p);
	n = word_len(p);
	if (n != strlen(kw) || strncasecmp(p->text + p->pos, kw, n) != 0)
		return false;
	p->pos += n;
	return true;
}

/* Whether the next word is kw, without consuming it. */
static bool next_is(struct wp *p, const char *kw)
{
	size_t save = p->pos;
	bool yes = keyword(p, kw);

	p->pos = save;
	return yes;
}

static bool punct(struct wp *p, const char *s)
{
	size_t n = strlen(s);

	skip_space(p);
	if (p->len - p->pos < n || memcmp(p->text + p->pos, s, n) != 0)
		return false;
	p->pos += n;
	return true;
}

/* A value: "quoted" or a bare word. */
static enum tfs_err scan_value(struct wp *p, struct token *t)
{
	size_t n;

	skip_space(p);
	t->at = p->pos;
	t->len = 0;
	t->quoted = false;
	if (p->pos < p->len && p->text[p->pos] == '"') {
		t->quoted = true;
		for (p->pos++; p->pos < p->len && p->text[p->pos] != '"';
		     p->pos++) {
			if (p->text[p->pos] == '\\' && p->pos + 1 < p->len)
				p->pos++;
			if (t->len == MAX_VALUE_TEXT)
				return tfsr__where_bad(p, t->at,
					   "value longer than %d bytes",
					   MAX_VALUE_TEXT);
			t->text[t->len++] = p->text[p->pos];
		}
		if (p->pos >= p->len)
			return tfsr__where_bad(p, t->at, "string without its closing '\"'");
		p->pos++;
		t->text[t->len] = '\0';
		return TFS_E_OK;
	}
	n = word_len(p);
	if (n == 0)
		return tfsr__where_bad(p, p->pos, p->pos < p->len ? "expected a value"
						       : "expected a value, "
							 "found the end");
	if (n > MAX_VALUE_TEXT)
		return tfsr__where_bad(p, t->at, "value longer than %d bytes",
			   MAX_VALUE_TEXT);
	memcpy(t->text, p->text + p->pos, n);
	t->text[n] = '\0';
	t->len = n;
	p->pos += n;
	return TFS_E_OK;
}

/* A field name: a bare word or `quoted` (`` is one backquote). */
static enum tfs_err scan_field(struct wp *p, struct token *t,
			       struct tfs_field_info *f)
{
	size_t n;
	int i;

	skip_space(p);
	t->at = p->pos;
	t->len = 0;
	if (p->pos < p->len && p->text[p->pos] == '`') {
		for (p->pos++;; p->pos++) {
			if (p->pos >= p->len)
				return tfsr__where_bad(p, t->at,
					   "field name without its closing '`'");
			if (p->text[p->pos] == '`') {
				if (p->pos + 1 < p->len &&
				    p->text[p->pos + 1] == '`')
					p->pos++;
				else
					break;
			}
			if (t->len == MAX_VALUE_TEXT)
				return tfsr__where_bad(p, t->at, "field name too long");
			t->text[t->len++] = p->text[p->pos];
		}
		p->pos++;
	} else {
		n = word_len(p);
		if (n == 0)
			return tfsr__where_bad(p, p->pos, "expected a field name");
		if (n > MAX_VALUE_TEXT)
			return tfsr__where_bad(p, t->at, "field name too long");
		memcpy(t->text, p->text + p->pos, n);
		t->len = n;
		p->pos += n;
	}
	t->text[t->len] = '\0';
	if (strlen(t->text) != t->len ||
	    (i = tfs_schema_field_index(p->s, t->text)) < 0)
		return tfsr__where_bad(p, t->at, "no field '%s'", t->text);
	tfs_schema_field(p->s, (uint32_t)i, f);
	return TFS_E_OK;
}

/* Whether a field name comes next (nothing consumed, nothing reported). */
static bool field_ahead(struct wp *p)
{
	char name[256];
	size_t n;

	skip_space(p);
	if (p->pos < p->len && p->text[p->pos] == '`')
		return true; /* only names are backquoted */
	n = word_len(p);
	if (n == 0 || n >= sizeof(name))
		return false;
	memcpy(name, p->text + p->pos, n);
	name[n] = '\0';
	return tfs_schema_field_index(p->s, name) >= 0;
}

/* ---- The tree ----------------------------------------------------------- */

static enum tfs_err set_field(struct wp *p, struct tfs_where *n,
			      const char *name)
{
	n->field = tfs_strdup(name);
	return n->field ? TFS_E_OK : tfsr__where_nomem(p);
}

/* Moves the bytes of b into n's value. */
static void take_value(struct tfs_where *n, struct tfs_buf *b)
{
	size_t len = 0;

	n->value_len = b->len;
	if (b->len)
		n->value = tfs_buf_detach(b, &len);
	else
		tfs_buf_release(b);
}

static enum tfs_err parse_or(struct wp *p, struct tfs_where *n);

static bool cmp_op(struct wp *p, enum tfs_where_op *op)
{
	static const struct {
		const char *s;
		enum tfs_where_op op;
	} ops[] = {
		{"==", TFS_WHERE_EQ}, {"!=", TFS_WHERE_NE},
		{"<>", TFS_WHERE_NE}, {"<=", TFS_WHERE_LE},
		{">=", TFS_WHERE_GE}, {"=", TFS_WHERE_EQ},
		{"<", TFS_WHERE_LT},  {">", TFS_WHERE_GT},
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (punct(p, ops[i].s)) {
			*op = ops[i].op;
			return true;
		}
	}
	return false;
}

static enum tfs_where_op mirror(enum tfs_where_op op)
{
	switch (op) {
	case TFS_WHERE_LT:
		return TFS_WHERE_GT;
	case TFS_WHERE_LE:
		return TFS_WHERE_GE;
	case TFS_WHERE_GT:
		return TFS_WHERE_LT;
	case TFS_WHERE_GE:
		return TFS_WHERE_LE;
	default:
		return op;
	}
}

static bool ordered(enum tfs_where_op op)
{
	return op == TFS_WHERE_LT || op == TFS_WHERE_LE || op == TFS_WHERE_GT ||
	       op == TFS_WHERE_GE;
}

/* Refuses an ordered comparison on an attribute whose enumeration has
 * no order (its index order means nothing). */
static enum tfs_err check_order(struct wp *p, const struct tfs_field_info *f,
				enum tfs_where_op op, size_t at)
{
	const struct tfs_enumeration *en;

	if (!ordered(op) || !f->enumeration || !p->a)
		return TFS_E_OK;
	en = tfs_array_enumeration_named(p->a, f->enumeration);
	if (en && !en->ordered)
		return tfsr__where_bad(p, at,
			   "'%s' has an unordered enumeration: only =, != and "
			   "in compare it",
			   f->name);
	return TFS_E_OK;
}

/* FIELD [not] in ( VALUE, ... ) after FIELD and [not]. */
static enum tfs_err parse_in(struct wp *p, struct tfs_where *n,
			     const struct tfs_field_info *f, bool not_in,
			     struct token *t)
{
	struct tfs_buf b;
	size_t cap = 0;
	enum tfs_err e;

	n->op = not_in ? TFS_WHERE_NOT_IN : TFS_WHERE_IN;
	if ((e = set_field(p, n, f->name)))
		return e;
	if (!punct(p, "("))
		return tfsr__where_bad(p, p->pos, "expected '(' after in");
	tfs_buf_init(&b, SIZE_MAX);
	if (punct(p, ")"))
		goto done;
	for (;;) {
		if (n->value_num == MAX_SET) {
			e = tfsr__where_bad(p, p->pos, "more than %d values in a set",
				MAX_SET);
			goto fail;
		}
		if ((e = scan_value(p, t)))
			goto fail;
		if (tfs_grow(&n->offsets, &cap, (size_t)n->value_num + 1,
			     sizeof(*n->offsets))) {
			e = tfsr__where_nomem(p);
			goto fail;
		}
		n->offsets[n->value_num++] = b.len;
		if ((e = tfsr__where_put_value(p, f, t, &b)))
			goto fail;
		if (punct(p, ")"))
			break;
		if (!punct(p, ",")) {
			e = tfsr__where_bad(p, p->pos, "expected ',' or ')' in the set");
			goto fail;
		}
	}
done:
	take_value(n, &b);
	return TFS_E_OK;
fail:
	tfs_buf_release(&b);
	return e;
}

static enum tfs_err parse_startswith(struct wp *p, struct tfs_where *n,
				     struct token *t)
{
	struct tfs_field_info f;
	struct tfs_buf b;
	enum tfs_err e;

	if (!punct(p, "("))
		return tfsr__where_bad(p, p->pos, "expected '(' after startswith");
	if ((e = scan_field(p, t, &f)))
		return e;
	if (tfs_datatype_class(f.type) != TFS_CLASS_STRING || f.enumeration)
		return tfsr__where_bad(p, t->at, "startswith needs a string field, '%s' is %s",
			   f.name, tfs_datatype_name(f.type));
	n->op = TFS_WHERE_STARTSWITH;
	if ((e = set_field(p, n, f.name)))
		return e;
	if (!punct(p, ","))
		return tfsr__where_bad(p, p->pos, "expected ',' in startswith");
	if ((e = scan_value(p, t)))
		return e;
	tfs_buf_init(&b, SIZE_MAX);
	if ((e = tfsr__where_put_value(p, &f, t, &b))) {
		tfs_buf_release(&b);
		return e;
	}
	n->value_num = 1;
	take_value(n, &b);
	if (!punct(p, ")"))
		return tfsr__where_bad(p, p->pos, "expected ')' after startswith");
	return TFS_E_OK;
}

/* true or false alone, unless a field has that name: whether n is that
 * constant (else nothing is taken). v holds the word. */
static bool parse_truth(struct wp *p, struct tfs_where *n, struct token *v)
{
	size_t save;

	skip_space(p);
	save = p->pos;
	if (keyword(p, "true") || keyword(p, "false")) {
		bool alone = at_end(p) || peek(p) == ')' || next_is(p, "and") ||
			     next_is(p, "or") || punct(p, "&&") ||
			     punct(p, "||");
		bool yes = tolower((unsigned char)p->text[save]) == 't';

		memcpy(v->text, p->text + save, yes ? 4 : 5);
		v->text[yes ? 4 : 5] = '\0';
		if (alone && tfs_schema_field_index(p->s, v->text) < 0) {
			p->pos = save + (yes ? 4 : 5);
			n->op = yes ? TFS_WHERE_TRUE : TFS_WHERE_FALSE;
			return true;
		}
	}
	p->pos = save;
	return false;
}

/* VALUE CMP FIELD: a value that is not a field name, then an operator
 * and a field. *matched: it was one (v the value, *f the field, *op the
 * operator seen from the field's side); else nothing is taken. */
static enum tfs_err parse_value_first(struct wp *p, struct token *t,
				      struct token *v, struct tfs_field_info *f,
				      enum tfs_where_op *op, bool *matched)
{
	size_t save;
	enum tfs_err e;
	int i;

	*matched = false;
	skip_space(p);
	save = p->pos;
	if (p->pos < p->len && p->text[p->pos] == '`')
		return TFS_E_OK;
	if ((e = scan_value(p, v)))
		return e;
	i = v->quoted ? -1 : tfs_schema_field_index(p->s, v->text);
	if (i < 0 && cmp_op(p, op) && field_ahead(p)) {
		if ((e = scan_field(p, t, f)))
			return e;
		*op = mirror(*op);
		*matched = true;
		return TFS_E_OK;
	}
	p->pos = save;
	return TFS_E_OK;
}

/* FIELD is [not] null, FIELD [not] in (...) (*done: n is complete), or
 * FIELD CMP VALUE (*f, *op and v for parse_compare). */
static enum tfs_err parse_field_first(struct wp *p, struct tfs_where *n,
				      struct token *t, struct token *v,
				      struct tfs_field_info *f,
				      enum tfs_where_op *op, bool *done)
{
	size_t save;
	enum tfs_err e;

	*done = true;
	if ((e = scan_field(p, t, f)))
		return e;
	if (keyword(p, "is")) {
		bool not = keyword(p, "not");

		if (!keyword(p, "null"))
			return tfsr__where_bad(p, p->pos, "expected null after is");
		if (!f->nullable) {
			/* Cells of a field that is not nullable are never
			 * NULL: the test is constant. */
			n->op = not ? TFS_WHERE_TRUE : TFS_WHERE_FALSE;
			return TFS_E_OK;
		}
		n->op = not ? TFS_WHERE_IS_NOT_NULL : TFS_WHERE_IS_NULL;
		return set_field(p, n, f->name);
	}
	if (keyword(p, "in"))
		return parse_in(p, n, f, false, v);
	save = p->pos;
	if (keyword(p, "not")) {
		if (keyword(p, "in"))
			return parse_in(p, n, f, true, v);
		p->pos = save;
	}
	if (!cmp_op(p, op))
		return tfsr__where_bad(p, p->pos,
			   at_end(p) ? "expected an operator after '%s', found the end"
				     : "expected an operator after '%s'",
			   f->name);
	*done = false;
	return scan_value(p, v);
}

/* FIELD op VALUE into n. */
static enum tfs_err parse_compare(struct wp *p, struct tfs_where *n,
				  const struct tfs_field_info *f,
				  enum tfs_where_op op, const struct token *v)
{
	struct tfs_buf b;
	enum tfs_err e;

	if ((e = check_order(p, f, op, v->at)))
		return e;
	n->op = op;
	n->value_num = 1;
	if ((e = set_field(p, n, f->name)))
		return e;
	tfs_buf_init(&b, SIZE_MAX);
	if ((e = tfsr__where_put_value(p, f, v, &b))) {
		tfs_buf_release(&b);
		return e;
	}
	take_value(n, &b);
	return TFS_E_OK;
}

static enum tfs_err parse_pred(struct wp *p, struct tfs_where *n)
{
	struct token *t, *v;
	struct tfs_field_info f;
	enum tfs_where_op op = TFS_WHERE_EQ;
	size_t save = p->pos;
	bool matched = false, done = false;
	enum tfs_err e = TFS_E_OK;

	t = tfs_mallocn(2, sizeof(*t));
	if (!t)
		return tfsr__where_nomem(p);
	v = t + 1;
	if (at_end(p)) {
		e = tfsr__where_bad(p, p->pos, "expected a condition, found the end");
		goto out;
	}
	if (next_is(p, "startswith")) {
		keyword(p, "startswith");
		if (peek(p) == '(') {
			e = parse_startswith(p, n, t);
			goto out;
		}
		p->pos = save;
	}
	if (parse_truth(p, n, v))
		goto out;
	e = parse_value_first(p, t, v, &f, &op, &matched);
	if (!e && !matched)
		e = parse_field_first(p, n, t, v, &f, &op, &done);
	if (!e && !done)
		e = parse_compare(p, n, &f, op, v);
out:
	tfs_free(t);
	return e;
}

static enum tfs_err parse_unary(struct wp *p, struct tfs_where *n)
{
	enum tfs_err e;
	size_t at;

	skip_space(p);
	at = p->pos;
	if (++p->depth > TFS_WHERE_MAX_DEPTH) {
		e = tfsr__where_bad(p, at, "nested deeper than %d levels",
			TFS_WHERE_MAX_DEPTH);
		goto out;
	}
	if (keyword(p, "not") || (peek(p) == '!' &&
				  !(p->pos + 1 < p->len &&
				    p->text[p->pos + 1] == '=') &&
				  punct(p, "!"))) {
		n->op = TFS_WHERE_NOT;
		n->children = tfs_callocn(1, sizeof(*n->children));
		if (!n->children) {
			e = tfsr__where_nomem(p);
			goto out;
		}
		n->child_num = 1;
		e = parse_unary(p, &n->children[0]);
		goto out;
	}
	if (punct(p, "(")) {
		if ((e = parse_or(p, n)))
			goto out;
		if (!punct(p, ")"))
			e = tfsr__where_bad(p, p->pos, "expected ')' to close the '(' at %zu",
				at + 1);
		goto out;
	}
	e = parse_pred(p, n);
out:
	p->depth--;
	return e;
}

/* child (AND|OR child)*: one node, or an inner node of them all. */
static enum tfs_err parse_list(struct wp *p, struct tfs_where *n,
			       enum tfs_where_op op)
{
	const char *kw = op == TFS_WHERE_AND ? "and" : "or";
	const char *sym = op == TFS_WHERE_AND ? "&&" : "||";
	struct tfs_where first, *grown;
	size_t cap = 0;
	enum tfs_err e;

	memset(&first, 0, sizeof(first));
	e = op == TFS_WHERE_AND ? parse_unary(p, &first)
				: parse_list(p, &first, TFS_WHERE_AND);
	if (e) {
		tfs_where_release(&first);
		return e;
	}
	if (!next_is(p, kw) && !(skip_space(p), p->len - p->pos >= 2 &&
				 memcmp(p->text + p->pos, sym, 2) == 0)) {
		*n = first;
		return TFS_E_OK;
	}
	n->op = op;
	if (tfs_grow(&n->children, &cap, 1, sizeof(*n->children))) {
		tfs_where_release(&first);
		return tfsr__where_nomem(p);
	}
	n->children[n->child_num++] = first;
	while (keyword(p, kw) || punct(p, sym)) {
		if (tfs_grow(&n->children, &cap, n->child_num + 1,
			     sizeof(*n->children)))
			return tfsr__where_nomem(p);
		grown = &n->children[n->child_num++];
		memset(grown, 0, sizeof(*grown));
		e = op == TFS_WHERE_AND ? parse_unary(p, grown)
					: parse_list(p, grown, TFS_WHERE_AND);
		if (e)
			return e;
	}
	return TFS_E_OK;
}

static enum tfs_err parse_or(struct wp *p, struct tfs_where *n)
{
	return parse_list(p, n, TFS_WHERE_OR);
}

enum tfs_err tfsr_where_parse(const struct tfs_schema *s,
			      const struct tfs_array *a, const char *text,
			      size_t len, struct tfs_where **out,
			      size_t *err_pos, struct tfs_diag *d)
{
	struct wp p = {.s = s, .a = a, .text = text, .len = len, .d = d};
	struct tfs_where *n;
	enum tfs_err e;

	*out = NULL;
	if (len > TFSR_WHERE_MAX_TEXT) {
		e = tfsr__where_bad(&p, 0, "filter longer than %d bytes",
			TFSR_WHERE_MAX_TEXT);
		goto fail_pos;
	}
	if (memchr(text, '\0', len)) {
		e = tfsr__where_bad(&p, (size_t)((const char *)memchr(text, '\0', len) -
				     text),
			"NUL byte in the filter");
		goto fail_pos;
	}
	n = tfs_callocn(1, sizeof(*n));
	if (!n)
		return tfsr__where_nomem(&p);
	if (at_end(&p)) {
		e = tfsr__where_bad(&p, p.pos, "empty filter");
		goto fail;
	}
	if ((e = parse_or(&p, n)))
		goto fail;
	if (!at_end(&p)) {
		e = tfsr__where_bad(&p, p.pos,
			p.text[p.pos] == ')' ? "')' without its '('"
					     : "expected and, or or the end");
		goto fail;
	}
	*out = n;
	return TFS_E_OK;
fail:
	tfs_where_free(n);
fail_pos:
	if (err_pos)
		*err_pos = p.err_pos;
	return e;
}

static size_t add_fields(const struct tfs_where *c, const char **names,
			 size_t cap, size_t n)
{
	if (c->field) {
		for (size_t i = 0; i < n && i < cap; i++)
			if (strcmp(names[i], c->field) == 0)
				return n;
		if (n < cap)
			names[n] = c->field;
		return n + 1;
	}
	for (size_t i = 0; i < c->child_num; i++)
		n = add_fields(&c->children[i], names, cap, n);
	return n;
}

size_t tfsr_where_fields(const struct tfs_where *c, const char **names,
			 size_t cap)
{
	return add_fields(c, names, cap, 0);
}
