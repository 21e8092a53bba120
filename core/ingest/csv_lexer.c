/* A streaming RFC 4180 tokenizer: the file is read in large blocks and
 * handed out one record at a time, never held whole. Quoted fields may
 * hold commas, line breaks and escaped quotes (""); records end with LF,
 * CRLF or a lone CR; a UTF-8 byte order mark at the start is skipped and
 * blank lines are ignored. A record is tokenized only once it is whole in
 * the buffer, so the fields point into the buffer with no copy; one that
 * straddles a block boundary is moved to the front and scanned again. */
#include "ingest_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tfs_alloc.h"

/* Characters that end an unquoted field's fast scan. */
static const bool stop_unquoted[256] = {
	[','] = true, ['\n'] = true, ['\r'] = true, ['"'] = true,
};

#define ONES UINT64_C(0x0101010101010101)
#define HIGHS UINT64_C(0x8080808080808080)

/* Bytes of x equal to c get their high bit set (exactly: no false
 * positives, as in the classic zero-byte test with the carry masked). */
static inline uint64_t eq_bytes(uint64_t x, uint8_t c)
{
	uint64_t y = x ^ (ONES * c);

	return ~(((y & ~HIGHS) + ~HIGHS) | y) & HIGHS;
}

/* Index of the first byte in [i, end) that ends an unquoted field, or
 * end: eight bytes at a time, since fields of numbers are short and this
 * loop is most of the tokenizer's time. */
static size_t scan_unquoted(const uint8_t *buf, size_t i, size_t end)
{
	while (end - i >= 8) {
		uint64_t x, m;

		memcpy(&x, buf + i, 8);
		m = eq_bytes(x, ',') | eq_bytes(x, '\n') | eq_bytes(x, '\r') |
		    eq_bytes(x, '"');
		if (m)
			return i + (size_t)(__builtin_ctzll(m) >> 3);
		i += 8;
	}
	while (i < end && !stop_unquoted[buf[i]])
		i++;
	return i;
}

static void lexer_init(struct tfs__csv_lexer *lx, const char *name,
		       size_t block)
{
	memset(lx, 0, sizeof(*lx));
	lx->fd = -1;
	lx->name = name;
	lx->block = block ? block : TFS__CSV_BLOCK;
	lx->line = 1;
}

enum tfs_err tfs__csv_open(struct tfs__csv_lexer *lx, const char *path,
			   const char *name, size_t block, struct tfs_diag *d)
{
	struct stat st;

	lexer_init(lx, name ? name : path, block);
	lx->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (lx->fd < 0)
		return tfs_fail(d, errno == ENOENT ? TFS_E_NOT_FOUND : TFS_E_IO,
				"%s: cannot open: %s", lx->name, strerror(errno));
	if (fstat(lx->fd, &st) == 0 && S_ISREG(st.st_mode))
		lx->size = (uint64_t)st.st_size;
#ifdef POSIX_FADV_SEQUENTIAL
	(void)posix_fadvise(lx->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
	return TFS_E_OK;
}

void tfs__csv_open_mem(struct tfs__csv_lexer *lx, const void *mem, size_t len,
		       const char *name, size_t block)
{
	lexer_init(lx, name, block);
	lx->mem = mem;
	lx->mem_len = len;
	lx->size = len;
}

void tfs__csv_close(struct tfs__csv_lexer *lx)
{
	if (lx->fd >= 0)
		close(lx->fd);
	tfs_free(lx->buf);
	tfs_free(lx->fields);
	memset(lx, 0, sizeof(*lx));
	lx->fd = -1;
}

uint64_t tfs__csv_offset(const struct tfs__csv_lexer *lx)
{
	return lx->buf_offset + lx->pos;
}

const char *tfs__msg_text(char *out, size_t cap, const void *p, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const uint8_t *b = p;
	size_t w = 0, i;

	for (i = 0; i < len; i++) {
		bool plain = b[i] >= 0x20 && b[i] != 0x7f && b[i] != '\\';

		/* Room for this byte's text, "..." and the NUL. */
		if (w + (plain ? 1 : 4) + 4 > cap)
			break;
		if (plain) {
			out[w++] = (char)b[i];
		} else {
			out[w++] = '\\';
			out[w++] = 'x';
			out[w++] = hex[b[i] >> 4];
			out[w++] = hex[b[i] & 15];
		}
	}
	if (i < len) {
		memcpy(out + w, "...", 3);
		w += 3;
	}
	out[w] = '\0';
	return out;
}

enum tfs_err tfs__csv_fail(const struct tfs__csv_lexer *lx,
			   struct tfs_diag *d, enum tfs_err code,
			   uint64_t line, size_t col, const char *fmt, ...)
{
	char why[224];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	if (col == 0)
		return tfs_fail(d, code, "%s: line %" PRIu64 ": %s", lx->name,
				line, why);
	if (col <= lx->col_num && lx->col_names) {
		char name[64];

		/* Header names are data: no line breaks into the log. */
		tfs__msg_text(name, sizeof(name), lx->col_names[col - 1],
			      strlen(lx->col_names[col - 1]));
		return tfs_fail(d, code, "%s: line %" PRIu64 ", column %zu ('%s'): %s",
				lx->name, line, col, name, why);
	}
	return tfs_fail(d, code, "%s: line %" PRIu64 ", column %zu: %s", lx->name,
			line, col, why);
}

/* Moves the unread bytes to the front and reads one more block (growing
 * the buffer when a record fills it). Sets lx->eof when nothing is left. */
static enum tfs_err refill(struct tfs__csv_lexer *lx, struct tfs_diag *d)
{
	size_t keep = lx->len - lx->pos;

	if (lx->pos) {
		memmove(lx->buf, lx->buf + lx->pos, keep);
		lx->buf_offset += lx->pos;
		lx->pos = 0;
		lx->len = keep;
	}
	if (lx->cap - lx->len < lx->block) {
		if (keep > TFS__CSV_RECORD_MAX)
			return tfs__csv_fail(lx, d, TFS_E_INVALID, lx->line, 0,
					     "record longer than %zu MiB (an unterminated quote?)",
					     TFS__CSV_RECORD_MAX >> 20);
		if (tfs_grow(&lx->buf, &lx->cap, keep + lx->block, 1))
			return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", lx->name);
	}
	size_t want = lx->cap - lx->len;

	if (want > lx->block)
		want = lx->block;
	if (lx->fd < 0) {
		size_t n = lx->mem_len - lx->mem_pos;

		if (n > want)
			n = want;
		if (n)
			memcpy(lx->buf + lx->len, lx->mem + lx->mem_pos, n);
		lx->mem_pos += n;
		lx->len += n;
		if (n == 0)
			lx->eof = true;
		return TFS_E_OK;
	}
	for (;;) {
		ssize_t n = read(lx->fd, lx->buf + lx->len, want);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tfs_fail(d, TFS_E_IO, "%s: read: %s", lx->name,
					strerror(errno));
		lx->len += (size_t)n;
		if (n == 0)
			lx->eof = true;
		return TFS_E_OK;
	}
}

static enum tfs_err add_field(struct tfs__csv_lexer *lx, const uint8_t *p,
			      size_t len, bool quoted, uint64_t line,
			      struct tfs_diag *d)
{
	if (tfs_grow(&lx->fields, &lx->field_cap, lx->field_num + 1,
		     sizeof(*lx->fields)))
		return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", lx->name);
	lx->fields[lx->field_num++] = (struct tfs__csv_field){
		.p = p, .len = len, .quoted = quoted, .esc = false, .line = line};
	return TFS_E_OK;
}

/* Outcome of scanning one record in the buffer; SCAN_NEXT, inside
 * scan_record only: the record goes on. */
enum scan { SCAN_DONE, SCAN_MORE, SCAN_FAIL, SCAN_NEXT };

/* Turns "" into " inside a quoted field, in place (it only shrinks). */
static size_t unescape(uint8_t *p, size_t len)
{
	size_t w = 0;

	for (size_t r = 0; r < len; r++) {
		p[w++] = p[r];
		if (p[r] == '"')
			r++; /* the second quote of the pair */
	}
	return w;
}

/* Where scanning a record stands: the next byte and its line. */
struct scan_cursor {
	size_t i;
	uint64_t line;
};

/* The quoted field at c->i: up to its closing quote, which a separator,
 * a line end or the end of the file follows. SCAN_NEXT when it is a
 * field of the record. */
static inline enum scan scan_quoted_field(struct tfs__csv_lexer *lx,
					  struct scan_cursor *c, size_t col,
					  enum tfs_err *err, struct tfs_diag *d)
{
	uint8_t *buf = lx->buf;
	size_t end = lx->len, start = c->i + 1, j = start;
	uint64_t line = c->line, fline = c->line;
	bool esc = false;

	for (;;) {
		const uint8_t *q = memchr(buf + j, '"', end - j);
		size_t stop = q ? (size_t)(q - buf) : end;

		for (const uint8_t *nl = memchr(buf + j, '\n', stop - j);
		     nl; nl = memchr(nl + 1, '\n', (size_t)(buf + stop - nl - 1)))
			line++;
		/* A lone CR inside quotes is also a line break. */
		for (size_t k = j; k < stop; k++)
			if (buf[k] == '\r' && (k + 1 >= end || buf[k + 1] != '\n'))
				line++;
		if (!q) {
			if (!lx->eof)
				return SCAN_MORE;
			*err = tfs__csv_fail(lx, d, TFS_E_INVALID, fline, col,
					     "quoted field not closed before the end of the file");
			return SCAN_FAIL;
		}
		j = stop + 1;
		if (j == end && !lx->eof)
			return SCAN_MORE;
		if (j < end && buf[j] == '"') {
			esc = true;
			j++;
			continue;
		}
		break;
	}
	/* Escaped quotes are undone once the record is whole:
	 * a rescan after a refill must see the original bytes. */
	if ((*err = add_field(lx, buf + start, j - 1 - start, true, fline, d)))
		return SCAN_FAIL;
	lx->fields[lx->field_num - 1].esc = esc;
	if (j < end && buf[j] != ',' && buf[j] != '\n' && buf[j] != '\r') {
		*err = tfs__csv_fail(lx, d, TFS_E_INVALID, line, col,
				     "character after a closing quote (a quote inside a field must be doubled)");
		return SCAN_FAIL;
	}
	c->i = j;
	c->line = line;
	return SCAN_NEXT;
}

/* The unquoted field at c->i, up to a separator or a line end. */
static inline enum scan scan_plain_field(struct tfs__csv_lexer *lx,
					 struct scan_cursor *c, size_t col,
					 enum tfs_err *err, struct tfs_diag *d)
{
	size_t start = c->i, end = lx->len;
	size_t i = scan_unquoted(lx->buf, start, end);

	if (i < end && lx->buf[i] == '"') {
		*err = tfs__csv_fail(lx, d, TFS_E_INVALID, c->line, col,
				     "quote inside an unquoted field (quote the whole field and double the quote)");
		return SCAN_FAIL;
	}
	if (i == end && !lx->eof)
		return SCAN_MORE;
	if ((*err = add_field(lx, lx->buf + start, i - start, false, c->line, d)))
		return SCAN_FAIL;
	c->i = i;
	return SCAN_NEXT;
}

/* When the caller needs no more fields: jump to the line's end when the
 * rest holds no quote and no lone CR, so no line break can hide in it.
 * SCAN_DONE after the jump, SCAN_NEXT when the fields go on. */
static inline enum scan skip_unwanted_fields(struct tfs__csv_lexer *lx,
					     struct scan_cursor *c)
{
	const uint8_t *buf = lx->buf;
	size_t i = c->i, end = lx->len;

	if (i < end && buf[i] == ',' && lx->field_limit &&
	    lx->field_num >= lx->field_limit) {
		const uint8_t *nl = memchr(buf + i, '\n', end - i);
		size_t rest;

		if (!nl && !lx->eof)
			return SCAN_MORE;
		rest = nl ? (size_t)(nl - (buf + i)) : 0;
		if (rest && buf[i + rest - 1] == '\r')
			rest--;
		if (nl && !memchr(buf + i, '"', rest) &&
		    !memchr(buf + i, '\r', rest)) {
			c->i = (size_t)(nl - buf) + 1;
			c->line++;
			return SCAN_DONE;
		}
	}
	return SCAN_NEXT;
}

/* After a field, buf[c->i] is a separator (SCAN_NEXT, past it), a line
 * end (SCAN_DONE, past it), or c->i is the end at EOF (SCAN_DONE). */
static inline enum scan end_field(struct tfs__csv_lexer *lx,
				  struct scan_cursor *c)
{
	const uint8_t *buf = lx->buf;
	size_t end = lx->len;

	if (c->i < end && buf[c->i] == ',') {
		c->i++;
		return SCAN_NEXT;
	}
	if (c->i < end && buf[c->i] == '\r') {
		if (c->i + 1 == end && !lx->eof)
			return SCAN_MORE;
		c->i++;
		if (c->i < end && buf[c->i] == '\n')
			c->i++;
		c->line++;
	} else if (c->i < end) {
		c->i++;
		c->line++;
	}
	return SCAN_DONE;
}

/* The record is whole: escaped quotes undone, lx past it. */
static inline void finish_record(struct tfs__csv_lexer *lx,
				 const struct scan_cursor *c)
{
	for (size_t k = 0; k < lx->field_num; k++) {
		struct tfs__csv_field *f = &lx->fields[k];

		if (f->esc)
			f->len = unescape(lx->buf + (f->p - lx->buf), f->len);
	}
	lx->pos = c->i;
	lx->line = c->line;
}

/* Scans the record at lx->pos. SCAN_MORE: the buffer ends before the
 * record does and more may come. On SCAN_DONE the fields are set and
 * lx->pos / lx->line are past the record. */
static enum scan scan_record(struct tfs__csv_lexer *lx, enum tfs_err *err,
			     struct tfs_diag *d)
{
	struct scan_cursor c = {lx->pos, lx->line};
	enum scan s;

	lx->field_num = 0;
	lx->record_line = c.line;
	for (;;) {
		size_t col = lx->field_num + 1;

		if (c.i < lx->len && lx->buf[c.i] == '"')
			s = scan_quoted_field(lx, &c, col, err, d);
		else
			s = scan_plain_field(lx, &c, col, err, d);
		if (s != SCAN_NEXT)
			return s;
		if ((s = skip_unwanted_fields(lx, &c)) == SCAN_NEXT)
			s = end_field(lx, &c);
		if (s == SCAN_DONE) {
			finish_record(lx, &c);
			return SCAN_DONE;
		}
		if (s == SCAN_MORE)
			return SCAN_MORE;
	}
}

enum tfs_err tfs__csv_next(struct tfs__csv_lexer *lx, bool *got,
			   struct tfs_diag *d)
{
	enum tfs_err e;

	*got = false;
	lx->field_num = 0;
	for (;;) {
		/* Enough bytes for the BOM and blank-line checks. */
		if (lx->len - lx->pos < 3 && !lx->eof) {
			if ((e = refill(lx, d)))
				return e;
			continue;
		}
		if (!lx->started) {
			lx->started = true;
			if (lx->len - lx->pos >= 3 &&
			    memcmp(lx->buf + lx->pos, "\xef\xbb\xbf", 3) == 0) {
				lx->pos += 3;
				continue;
			}
		}
		if (lx->pos == lx->len && lx->eof)
			return TFS_E_OK;
		/* Blank lines. */
		if (lx->buf[lx->pos] == '\n') {
			lx->pos++;
			lx->line++;
			continue;
		}
		if (lx->buf[lx->pos] == '\r') {
			lx->pos++;
			if (lx->pos < lx->len && lx->buf[lx->pos] == '\n')
				lx->pos++;
			lx->line++;
			continue;
		}
		break;
	}
	for (;;) {
		size_t pos = lx->pos;
		uint64_t line = lx->line;
		enum scan s = scan_record(lx, &e, d);

		if (s == SCAN_DONE) {
			*got = true;
			return TFS_E_OK;
		}
		if (s == SCAN_FAIL)
			return e;
		/* Scanned again from its start once more bytes are in. */
		lx->pos = pos;
		lx->line = line;
		if ((e = refill(lx, d)))
			return e;
	}
}
