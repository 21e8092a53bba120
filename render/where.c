/* The filter grammar, see where.h: a recursive-descent parser over the
 * text, building the core's condition tree leaf by leaf. */
#include "where.h"
#include "tfs_render.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cell_json.h"
#include "tfs_alloc.h"
#include "tfs_bytes.h"
#include "tfs_civil.h"

/* Longest value text (a string value, a set member). */
#define MAX_VALUE_TEXT 4096
/* Most values in one in (...) list. */
#define MAX_SET 65536

__extension__ typedef __int128 i128;

struct wp {
	const struct tfs_schema *s;
	const struct tfs_array *a;
	const char *text;
	size_t len, pos;
	size_t err_pos;
	unsigned depth;
	struct tfs_diag *d;
};

/* A value token: text decoded (quotes removed), where it started. */
struct token {
	bool quoted;
	size_t at;
	size_t len;
	char text[MAX_VALUE_TEXT + 1];
};

static enum tfs_err bad(struct wp *p, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static enum tfs_err bad(struct wp *p, size_t at, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->err_pos = at;
	return tfs_fail(p->d, TFS_E_INVALID, "filter at %zu: %s", at + 1, msg);
}

static enum tfs_err nomem(struct wp *p)
{
	return tfs_fail(p->d, TFS_E_NOMEM, "out of memory");
}

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
				return bad(p, t->at,
					   "value longer than %d bytes",
					   MAX_VALUE_TEXT);
			t->text[t->len++] = p->text[p->pos];
		}
		if (p->pos >= p->len)
			return bad(p, t->at, "string without its closing '\"'");
		p->pos++;
		t->text[t->len] = '\0';
		return TFS_E_OK;
	}
	n = word_len(p);
	if (n == 0)
		return bad(p, p->pos, p->pos < p->len ? "expected a value"
						       : "expected a value, "
							 "found the end");
	if (n > MAX_VALUE_TEXT)
		return bad(p, t->at, "value longer than %d bytes",
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
				return bad(p, t->at,
					   "field name without its closing '`'");
			if (p->text[p->pos] == '`') {
				if (p->pos + 1 < p->len &&
				    p->text[p->pos + 1] == '`')
					p->pos++;
				else
					break;
			}
			if (t->len == MAX_VALUE_TEXT)
				return bad(p, t->at, "field name too long");
			t->text[t->len++] = p->text[p->pos];
		}
		p->pos++;
	} else {
		n = word_len(p);
		if (n == 0)
			return bad(p, p->pos, "expected a field name");
		if (n > MAX_VALUE_TEXT)
			return bad(p, t->at, "field name too long");
		memcpy(t->text, p->text + p->pos, n);
		t->len = n;
		p->pos += n;
	}
	t->text[t->len] = '\0';
	if (strlen(t->text) != t->len ||
	    (i = tfs_schema_field_index(p->s, t->text)) < 0)
		return bad(p, t->at, "no field '%s'", t->text);
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

/* ---- Values into bytes of a type ----------------------------------------- */

/* Attoseconds per unit of DATETIME_DAY .. DATETIME_AS (and TIME_HR ..
 * TIME_AS, shifted by 1: TIME has no day). */
static i128 as_per_unit(unsigned k)
{
	static const uint64_t sec_div[] = {1, 1, 1, 1, 1000, 1000000,
					   1000000000, 1000000000000ull,
					   1000000000000000ull,
					   1000000000000000000ull};
	static const uint64_t secs[] = {86400, 3600, 60, 1};
	i128 one_sec = (i128)1000000000000000000ll;

	if (k < 4)
		return one_sec * (i128)secs[k];
	return one_sec / (i128)sec_div[k];
}

static bool digits(const char **s, unsigned min, unsigned max, int64_t *v)
{
	unsigned n = 0;

	*v = 0;
	while (n < max && isdigit((unsigned char)**s)) {
		*v = *v * 10 + (**s - '0');
		(*s)++;
		n++;
	}
	return n >= min;
}

/* Parses the clock part "HH[:MM[:SS[.f]]]" into attoseconds. */
static bool parse_clock(const char **sp, i128 *as)
{
	const char *s = *sp;
	int64_t h, m = 0, sec = 0;
	i128 frac = 0, scale = (i128)100000000000000000ll;

	if (!digits(&s, 1, 2, &h))
		return false;
	if (*s == ':') {
		s++;
		if (!digits(&s, 2, 2, &m) || m > 59)
			return false;
		if (*s == ':') {
			s++;
			if (!digits(&s, 2, 2, &sec) || sec > 60)
				return false;
			if (*s == '.') {
				s++;
				if (!isdigit((unsigned char)*s))
					return false;
				while (isdigit((unsigned char)*s)) {
					if (scale == 0 && *s != '0')
						return false; /* below 1 as */
					frac += scale * (*s - '0');
					scale /= 10;
					s++;
				}
			}
		}
	}
	*as = ((i128)h * 3600 + m * 60 + sec) * (i128)1000000000000000000ll +
	      frac;
	*sp = s;
	return true;
}

/* An ISO-8601 text as a value of datetime or time type; false when it is
 * none or does not fall on a whole unit. */
static bool parse_iso(uint8_t type, const char *s, int64_t *out)
{
	int64_t y, mo = 1, dd = 1;
	bool neg = false;
	i128 as = 0, unit, v, days;

	if (type >= TFS_TIME_HR && type <= TFS_TIME_AS) {
		if (*s == '-') {
			neg = true;
			s++;
		}
		if (!parse_clock(&s, &as) || *s)
			return false;
		unit = as_per_unit(type - TFS_TIME_HR + 1u);
		if (as % unit)
			return false;
		v = as / unit;
		v = neg ? -v : v;
		goto narrow;
	}
	if (*s == '-' || *s == '+') {
		neg = *s == '-';
		s++;
	}
	if (!digits(&s, 4, 9, &y))
		return false;
	y = neg ? -y : y;
	if (*s == '-') {
		s++;
		if (!digits(&s, 2, 2, &mo) || mo < 1 || mo > 12)
			return false;
		if (*s == '-') {
			s++;
			if (!digits(&s, 2, 2, &dd) || dd < 1 || dd > 31)
				return false;
			if (*s == 'T' || *s == 't' || *s == ' ') {
				s++;
				if (!parse_clock(&s, &as))
					return false;
			}
		}
	}
	if (*s == 'Z' || *s == 'z')
		s++;
	if (*s)
		return false;
	switch (type) {
	case TFS_DATETIME_YEAR:
		if (mo != 1 || dd != 1 || as)
			return false;
		v = (i128)y - 1970;
		goto narrow;
	case TFS_DATETIME_YEAR + 1:
		if (dd != 1 || as)
			return false;
		v = ((i128)y - 1970) * 12 + (mo - 1);
		goto narrow;
	default:
		break;
	}
	days = tfs_days_from_civil(y, (unsigned)mo, (unsigned)dd);
	if (type == TFS_DATETIME_YEAR + 2) { /* WEEK */
		if (as || days % 7)
			return false;
		v = days / 7;
		goto narrow;
	}
	as += days * 86400 * (i128)1000000000000000000ll;
	unit = as_per_unit(type - TFS_DATETIME_YEAR - 3u);
	if (as % unit)
		return false;
	v = as / unit;
narrow:
	if (v > INT64_MAX || v < INT64_MIN)
		return false;
	*out = (int64_t)v;
	return true;
}

static bool parse_hex(const char *s, size_t len, struct tfs_buf *out)
{
	if (len % 2)
		return false;
	for (size_t i = 0; i < len; i += 2) {
		char b[3] = {s[i], s[i + 1], 0};
		char *end;
		unsigned long v;

		if (!isxdigit((unsigned char)b[0]) ||
		    !isxdigit((unsigned char)b[1]))
			return false;
		v = strtoul(b, &end, 16);
		if (tfs_buf_append_u8(out, (uint8_t)v))
			return false;
	}
	return true;
}

/* One value of numeric type into dst (tfs_datatype_size bytes). */
static bool parse_number(uint8_t type, const char *text, uint8_t dst[8])
{
	int64_t v;

	if (cell_json_parse_value(type, text, dst))
		return true;
	if (type == TFS_BOOL) {
		if (strcasecmp(text, "true") == 0 ||
		    strcasecmp(text, "false") == 0) {
			dst[0] = text[0] == 't' || text[0] == 'T';
			return true;
		}
		return false;
	}
	if (tfs_datatype_class(type) == TFS_CLASS_FLOAT) {
		double inf = HUGE_VAL;

		if (strcasecmp(text, "inf") == 0 ||
		    strcasecmp(text, "-inf") == 0) {
			if (text[0] == '-')
				inf = -inf;
			if (type == TFS_FLOAT32) {
				float f = (float)inf;

				memcpy(dst, &f, sizeof(f));
			} else {
				memcpy(dst, &inf, sizeof(inf));
			}
			return true;
		}
		return false;
	}
	if (tfs_datatype_is_datetime(type) && parse_iso(type, text, &v)) {
		tfs_put_uint(dst, tfs_datatype_size(type), (uint64_t)v);
		return true;
	}
	return false;
}

/* The index of label t in enumeration en, as bytes of the attribute's
 * type; false when en has no such value. */
static bool enum_index(const struct tfs_enumeration *en, uint8_t attr_type,
		       const struct token *t, uint8_t dst[8])
{
	uint64_t vsize = tfs_datatype_size(en->type) * en->cell_val_num;
	uint8_t num[8];
	const uint8_t *want = (const uint8_t *)t->text;
	uint64_t want_len = t->len;
	size_t isize = tfs_datatype_size(attr_type);

	if (!en->offsets && tfs_datatype_class(en->type) != TFS_CLASS_STRING &&
	    en->cell_val_num == 1) {
		if (!parse_number(en->type, t->text, num))
			return false;
		want = num;
		want_len = tfs_datatype_size(en->type);
	}
	for (uint64_t k = 0; k < en->value_num; k++) {
		uint64_t start, end;

		if (en->offsets) {
			start = en->offsets[k];
			end = k + 1 < en->value_num ? en->offsets[k + 1]
						    : en->data_size;
		} else {
			start = k * vsize;
			end = start + vsize;
		}
		if (end < start || end > en->data_size)
			return false;
		if (end - start == want_len &&
		    memcmp(en->data + start, want, (size_t)want_len) == 0) {
			if (isize < 8 && (k >> (8 * isize)) != 0)
				return false;
			tfs_put_uint(dst, isize, k);
			return true;
		}
	}
	return false;
}

/* Appends the bytes of value t for field f to out. */
static enum tfs_err put_value(struct wp *p, const struct tfs_field_info *f,
			      const struct token *t, struct tfs_buf *out)
{
	enum tfs_type_class k = tfs_datatype_class(f->type);
	size_t size = tfs_datatype_size(f->type);
	uint8_t v[8];

	if (f->enumeration && p->a) {
		const struct tfs_enumeration *en =
			tfs_array_enumeration_named(p->a, f->enumeration);

		if (!en)
			return bad(p, t->at, "enumeration '%s' of '%s' is missing",
				   f->enumeration, f->name);
		if (!enum_index(en, f->type, t, v))
			return bad(p, t->at,
				   "'%s' is not a value of the enumeration "
				   "'%s' of '%s'",
				   t->text, f->enumeration, f->name);
		if (tfs_buf_append(out, v, size))
			return nomem(p);
		return TFS_E_OK;
	}
	if (k == TFS_CLASS_STRING) {
		if (tfs_buf_append(out, t->text, t->len))
			return nomem(p);
		return TFS_E_OK;
	}
	if (k == TFS_CLASS_BYTES) {
		if (!parse_hex(t->text, t->len, out))
			return bad(p, t->at, "'%s' is not hex bytes for '%s'",
				   t->text, f->name);
		return TFS_E_OK;
	}
	if (f->var || f->cell_val_num != 1) {
		/* Several values of a cell, separated by spaces. */
		const char *s = t->text;
		uint64_t n = 0;

		while (*s) {
			char one[128];
			size_t m = 0;

			while (*s == ' ')
				s++;
			if (!*s)
				break;
			while (s[m] && s[m] != ' ')
				m++;
			if (m >= sizeof(one))
				return bad(p, t->at, "value too long");
			memcpy(one, s, m);
			one[m] = '\0';
			s += m;
			if (!parse_number(f->type, one, v))
				return bad(p, t->at,
					   "'%s' is not a value of '%s' (%s)",
					   one, f->name,
					   tfs_datatype_name(f->type));
			if (tfs_buf_append(out, v, size))
				return nomem(p);
			n++;
		}
		if (!f->var && n != f->cell_val_num)
			return bad(p, t->at,
				   "'%s' holds %" PRIu64 " values, cells of "
				   "'%s' hold %" PRIu32,
				   t->text, n, f->name, f->cell_val_num);
		return TFS_E_OK;
	}
	if (!parse_number(f->type, t->text, v))
		return bad(p, t->at, "'%s' is not a value of '%s' (%s)",
			   t->text, f->name, tfs_datatype_name(f->type));
	if (tfs_buf_append(out, v, size))
		return nomem(p);
	return TFS_E_OK;
}

/* ---- The tree ----------------------------------------------------------- */

static enum tfs_err set_field(struct wp *p, struct tfs_where *n,
			      const char *name)
{
	n->field = tfs_strdup(name);
	return n->field ? TFS_E_OK : nomem(p);
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
		return bad(p, at,
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
		return bad(p, p->pos, "expected '(' after in");
	tfs_buf_init(&b, SIZE_MAX);
	if (punct(p, ")"))
		goto done;
	for (;;) {
		if (n->value_num == MAX_SET) {
			e = bad(p, p->pos, "more than %d values in a set",
				MAX_SET);
			goto fail;
		}
		if ((e = scan_value(p, t)))
			goto fail;
		if (tfs_grow(&n->offsets, &cap, (size_t)n->value_num + 1,
			     sizeof(*n->offsets))) {
			e = nomem(p);
			goto fail;
		}
		n->offsets[n->value_num++] = b.len;
		if ((e = put_value(p, f, t, &b)))
			goto fail;
		if (punct(p, ")"))
			break;
		if (!punct(p, ",")) {
			e = bad(p, p->pos, "expected ',' or ')' in the set");
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
		return bad(p, p->pos, "expected '(' after startswith");
	if ((e = scan_field(p, t, &f)))
		return e;
	if (tfs_datatype_class(f.type) != TFS_CLASS_STRING || f.enumeration)
		return bad(p, t->at, "startswith needs a string field, '%s' is %s",
			   f.name, tfs_datatype_name(f.type));
	n->op = TFS_WHERE_STARTSWITH;
	if ((e = set_field(p, n, f.name)))
		return e;
	if (!punct(p, ","))
		return bad(p, p->pos, "expected ',' in startswith");
	if ((e = scan_value(p, t)))
		return e;
	tfs_buf_init(&b, SIZE_MAX);
	if ((e = put_value(p, &f, t, &b))) {
		tfs_buf_release(&b);
		return e;
	}
	n->value_num = 1;
	take_value(n, &b);
	if (!punct(p, ")"))
		return bad(p, p->pos, "expected ')' after startswith");
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
			return bad(p, p->pos, "expected null after is");
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
		return bad(p, p->pos,
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
	if ((e = put_value(p, f, v, &b))) {
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
		return nomem(p);
	v = t + 1;
	if (at_end(p)) {
		e = bad(p, p->pos, "expected a condition, found the end");
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
		e = bad(p, at, "nested deeper than %d levels",
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
			e = nomem(p);
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
			e = bad(p, p->pos, "expected ')' to close the '(' at %zu",
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
		return nomem(p);
	}
	n->children[n->child_num++] = first;
	while (keyword(p, kw) || punct(p, sym)) {
		if (tfs_grow(&n->children, &cap, n->child_num + 1,
			     sizeof(*n->children)))
			return nomem(p);
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
		e = bad(&p, 0, "filter longer than %d bytes",
			TFSR_WHERE_MAX_TEXT);
		goto fail_pos;
	}
	if (memchr(text, '\0', len)) {
		e = bad(&p, (size_t)((const char *)memchr(text, '\0', len) -
				     text),
			"NUL byte in the filter");
		goto fail_pos;
	}
	n = tfs_callocn(1, sizeof(*n));
	if (!n)
		return nomem(&p);
	if (at_end(&p)) {
		e = bad(&p, p.pos, "empty filter");
		goto fail;
	}
	if ((e = parse_or(&p, n)))
		goto fail;
	if (!at_end(&p)) {
		e = bad(&p, p.pos,
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
