/* Parsing of the XML that S3 answers with, on expat: ListObjectsV2 pages
 * (ListBucketResult: Contents/Key, Size, LastModified; CommonPrefixes/
 * Prefix; IsTruncated; NextContinuationToken), <Error> bodies and single
 * values such as a multipart UploadId.
 *
 * The parser tracks the path of open elements only as far as it matters
 * (the element and its parent) and gathers character data of leaf
 * elements into a bounded buffer; namespaces are ignored (S3 puts its
 * elements in one default namespace). */
#include "s3_internal.h"

#include <expat.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"

/* Longest text of one element we keep (keys are at most 1024 bytes). */
#define TEXT_MAX 8192
#define DEPTH_MAX 16

struct xml_state {
	XML_Parser p;
	char stack[DEPTH_MAX][32];
	unsigned depth;  /* elements open */
	struct tfs_buf text;
	bool failed;     /* out of memory or bad value */
	bool too_long;
	/* ListObjectsV2 */
	struct tfs__s3_listing *l;
	bool root_ok;
	struct tfs__s3_object cur;
	bool have_key;
	/* single value */
	const char *want;
	char *found;
};

static void xs_init(struct xml_state *s)
{
	memset(s, 0, sizeof(*s));
	tfs_buf_init(&s->text, TEXT_MAX);
}

/* Names without a namespace prefix ("ns:Key" -> "Key"). */
static const char *local_name(const char *n)
{
	const char *c = strrchr(n, ':');

	return c ? c + 1 : n;
}

static bool element_is(const struct xml_state *s, const char *parent,
		       const char *name)
{
	if (s->depth < 1 || strcmp(s->stack[s->depth - 1], name))
		return false;
	if (!parent)
		return true;
	return s->depth >= 2 && !strcmp(s->stack[s->depth - 2], parent);
}

static void XMLCALL on_start(void *ud, const XML_Char *name,
			     const XML_Char **attrs)
{
	struct xml_state *s = ud;
	const char *n = local_name(name);

	(void)attrs;
	if (s->depth < DEPTH_MAX) {
		size_t len = strlen(n);

		if (len >= sizeof(s->stack[0]))
			len = sizeof(s->stack[0]) - 1;
		memcpy(s->stack[s->depth], n, len);
		s->stack[s->depth][len] = '\0';
	}
	s->depth++;
	s->text.len = 0;
	s->too_long = false;
	if (s->l && s->depth == 1 && !strcmp(n, "ListBucketResult"))
		s->root_ok = true;
	if (s->l && s->depth == 2 && !strcmp(n, "Contents")) {
		memset(&s->cur, 0, sizeof(s->cur));
		s->have_key = false;
	}
}

static void XMLCALL on_text(void *ud, const XML_Char *t, int len)
{
	struct xml_state *s = ud;

	if (len <= 0 || s->too_long)
		return;
	if (tfs_buf_append(&s->text, t, (size_t)len))
		s->too_long = true;
}

/* The gathered text as a new string (NULL on ENOMEM). */
static char *text_dup(struct xml_state *s)
{
	return tfs_strndup(s->text.data ? (const char *)s->text.data : "",
			   s->text.len);
}

static bool parse_u64(const char *t, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*t < '0' || *t > '9')
		return false;
	v = strtoull(t, &end, 10);
	if (*end)
		return false;
	*out = v;
	return true;
}

/* Leaf elements of a ListObjectsV2 page whose text we keep. */
static bool is_list_leaf(const struct xml_state *s)
{
	return element_is(s, "Contents", "Key") ||
	       element_is(s, "Contents", "Size") ||
	       element_is(s, "Contents", "LastModified") ||
	       element_is(s, "CommonPrefixes", "Prefix") ||
	       (s->depth == 2 && (element_is(s, NULL, "IsTruncated") ||
				  element_is(s, NULL, "NextContinuationToken")));
}

/* </Contents>: the object gathered so far joins the listing. */
static void contents_end(struct xml_state *s)
{
	struct tfs__s3_listing *l = s->l;

	if (!s->have_key) {
		s->failed = true;
		return;
	}
	if (tfs_grow(&l->objects, &l->objects_cap, l->nobjects + 1,
		     sizeof(*l->objects))) {
		tfs_free(s->cur.key);
		s->cur.key = NULL;
		s->failed = true;
		return;
	}
	l->objects[l->nobjects++] = s->cur;
	memset(&s->cur, 0, sizeof(s->cur));
	s->have_key = false;
}

/* Takes the text t of one common prefix. */
static void prefix_add(struct xml_state *s, char *t)
{
	struct tfs__s3_listing *l = s->l;

	if (tfs_grow(&l->prefixes, &l->prefixes_cap, l->nprefixes + 1,
		     sizeof(*l->prefixes))) {
		s->failed = true;
		tfs_free(t);
		return;
	}
	l->prefixes[l->nprefixes++] = t;
}

/* Stores the text t of a leaf element; takes t. */
static void list_leaf(struct xml_state *s, char *t)
{
	struct tfs__s3_listing *l = s->l;

	if (element_is(s, "Contents", "Key")) {
		tfs_free(s->cur.key);
		s->cur.key = t;
		s->have_key = true;
		return;
	}
	if (element_is(s, "CommonPrefixes", "Prefix")) {
		prefix_add(s, t);
		return;
	}
	if (element_is(s, NULL, "NextContinuationToken")) {
		tfs_free(l->next_token);
		l->next_token = t;
		return;
	}
	if (element_is(s, "Contents", "Size")) {
		if (!parse_u64(t, &s->cur.size))
			s->failed = true;
	} else if (element_is(s, "Contents", "LastModified")) {
		if (!tfs__s3_parse_time(t, &s->cur.mtime_ns))
			s->cur.mtime_ns = 0;
	} else if (element_is(s, NULL, "IsTruncated")) {
		l->truncated = !strcmp(t, "true");
	}
	tfs_free(t);
}

static void list_end(struct xml_state *s)
{
	char *t;

	if (!s->root_ok || s->depth > DEPTH_MAX)
		return;
	if (s->depth == 2 && element_is(s, NULL, "Contents")) {
		contents_end(s);
		return;
	}
	if (!is_list_leaf(s))
		return;
	if (s->too_long) {
		s->failed = true;
		return;
	}
	t = text_dup(s);
	if (!t) {
		s->failed = true;
		return;
	}
	list_leaf(s, t);
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
	struct xml_state *s = ud;

	(void)name;
	if (s->l)
		list_end(s);
	else if (s->want && !s->found && s->depth <= DEPTH_MAX &&
		 element_is(s, NULL, s->want) && !s->too_long)
		s->found = text_dup(s);
	if (s->depth)
		s->depth--;
	s->text.len = 0;
	s->too_long = false;
}

static bool run(struct xml_state *s, const char *xml, size_t len)
{
	bool ok;

	if (len > INT32_MAX)
		return false;
	s->p = XML_ParserCreate(NULL);
	if (!s->p)
		return false;
	XML_SetUserData(s->p, s);
	XML_SetElementHandler(s->p, on_start, on_end);
	XML_SetCharacterDataHandler(s->p, on_text);
	ok = XML_Parse(s->p, xml, (int)len, 1) == XML_STATUS_OK;
	XML_ParserFree(s->p);
	s->p = NULL;
	tfs_buf_release(&s->text);
	return ok;
}

void tfs__s3_listing_init(struct tfs__s3_listing *l)
{
	memset(l, 0, sizeof(*l));
}

void tfs__s3_listing_release(struct tfs__s3_listing *l)
{
	for (size_t i = 0; i < l->nobjects; i++)
		tfs_free(l->objects[i].key);
	for (size_t i = 0; i < l->nprefixes; i++)
		tfs_free(l->prefixes[i]);
	tfs_free(l->objects);
	tfs_free(l->prefixes);
	tfs_free(l->next_token);
	memset(l, 0, sizeof(*l));
}

enum tfs_err tfs__s3_parse_list(const char *xml, size_t len,
				struct tfs__s3_listing *l, struct tfs_diag *d)
{
	struct xml_state s;
	bool ok;

	xs_init(&s);
	s.l = l;
	l->truncated = false;
	tfs_free(l->next_token);
	l->next_token = NULL;
	ok = run(&s, xml, len);
	tfs_free(s.cur.key);
	if (!ok || !s.root_ok)
		return tfs_fail(d, TFS_E_CORRUPT,
				"s3: malformed object listing (%zu bytes)", len);
	if (s.failed)
		return tfs_fail(d, TFS_E_CORRUPT,
				"s3: object listing with a bad entry");
	return TFS_E_OK;
}

char *tfs__s3_xml_text(const char *xml, size_t len, const char *name)
{
	struct xml_state s;

	xs_init(&s);
	s.want = name;
	if (!run(&s, xml, len)) {
		tfs_free(s.found);
		return NULL;
	}
	return s.found;
}

static void copy_trunc(char *dst, size_t cap, const char *src)
{
	size_t n;

	if (!cap)
		return;
	n = src ? strlen(src) : 0;
	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

void tfs__s3_parse_error(const char *xml, size_t len, char *code,
			 size_t code_cap, char *msg, size_t msg_cap)
{
	char *c = len ? tfs__s3_xml_text(xml, len, "Code") : NULL;
	char *m = c ? tfs__s3_xml_text(xml, len, "Message") : NULL;

	copy_trunc(code, code_cap, c);
	copy_trunc(msg, msg_cap, m);
	/* Messages go into one log line: no control characters. */
	for (char *p = msg; msg_cap && *p; p++)
		if ((unsigned char)*p < 0x20)
			*p = ' ';
	tfs_free(c);
	tfs_free(m);
}
