/* The CSV tokenizer: RFC 4180 quoting, line ends, BOM, blank lines and
 * line numbers, each case tokenized with blocks of 1, 2, 3, 5 and 4096
 * bytes so that every record straddles a block boundary somewhere. */
#include <criterion/criterion.h>
#include <string.h>

#include "ingest_internal.h"
#include "tfs_buf.h"

static const size_t blocks[] = {1, 2, 3, 5, 4096};
/* lx.field_limit for the next tokenize calls (0 = every field). */
static size_t field_limit;

/* Records as text: fields joined by '|', quoted fields in <>, each record
 * prefixed by its line and ended by ';'. */
static enum tfs_err tokenize(const char *in, size_t len, size_t block,
			     struct tfs_buf *out, struct tfs_diag *d)
{
	struct tfs__csv_lexer lx;
	enum tfs_err e;
	bool got;

	tfs__csv_open_mem(&lx, in, len, "t.csv", block);
	lx.field_limit = field_limit;
	for (;;) {
		if ((e = tfs__csv_next(&lx, &got, d)) || !got)
			break;
		cr_assert(!tfs_buf_printf(out, "%llu:", (unsigned long long)lx.record_line));
		for (size_t i = 0; i < lx.field_num; i++) {
			const struct tfs__csv_field *f = &lx.fields[i];

			cr_assert(!tfs_buf_printf(out, "%s%s%.*s%s", i ? "|" : "",
						  f->quoted ? "<" : "", (int)f->len,
						  (const char *)f->p, f->quoted ? ">" : ""));
		}
		cr_assert(!tfs_buf_append(out, ";", 1));
	}
	if (!e)
		cr_assert_eq(tfs__csv_offset(&lx), len, "block %zu: offset", block);
	tfs__csv_close(&lx);
	return e;
}

static void expect(const char *in, size_t len, const char *want)
{
	for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
		struct tfs_buf out;
		struct tfs_diag d;

		tfs_diag_init(&d);
		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		cr_assert_eq(tokenize(in, len, blocks[b], &out, &d), TFS_E_OK,
			     "block %zu: %s", blocks[b], tfs_diag_msg(&d));
		cr_assert(!tfs_buf_append_u8(&out, 0));
		cr_assert_str_eq((const char *)out.data, want, "block %zu: got %s", blocks[b],
				 (const char *)out.data);
		tfs_buf_release(&out);
	}
}

#define EXPECT(in, want) expect(in, sizeof(in) - 1, want)

static void expect_fail(const char *in, size_t len, const char *msg)
{
	for (size_t b = 0; b < sizeof(blocks) / sizeof(blocks[0]); b++) {
		struct tfs_buf out;
		struct tfs_diag d;

		tfs_diag_init(&d);
		tfs_buf_init(&out, TFS_BUF_NO_MAX);
		cr_assert_eq(tokenize(in, len, blocks[b], &out, &d), TFS_E_INVALID,
			     "block %zu", blocks[b]);
		cr_assert_str_eq(d.msg, msg, "block %zu", blocks[b]);
		tfs_buf_release(&out);
	}
}

#define EXPECT_FAIL(in, msg) expect_fail(in, sizeof(in) - 1, msg)

Test(lexer, plain)
{
	EXPECT("a,b,c\n1,2,3\n", "1:a|b|c;2:1|2|3;");
	EXPECT("a,b\n1,2", "1:a|b;2:1|2;");
	EXPECT("x\n", "1:x;");
	EXPECT("", "");
	EXPECT("a,,\n,,\n", "1:a||;2:||;");
	EXPECT("a,b\n1,\n", "1:a|b;2:1|;");
}

Test(lexer, line_ends)
{
	EXPECT("a,b\r\n1,2\r\n", "1:a|b;2:1|2;");
	EXPECT("a,b\r1,2\r", "1:a|b;2:1|2;");
	EXPECT("a,b\r\n1,2", "1:a|b;2:1|2;");
	EXPECT("a\n\n\nb\r\n\r\nc", "1:a;4:b;6:c;");
	EXPECT("\n\na\n", "3:a;");
}

Test(lexer, bom)
{
	EXPECT("\xef\xbb\xbf" "a,b\n1,2\n", "1:a|b;2:1|2;");
	EXPECT("\xef\xbb\xbf", "");
	/* Only at the start of the file. */
	EXPECT("a\n\xef\xbb\xbf\n", "1:a;2:\xef\xbb\xbf;");
}

Test(lexer, quotes)
{
	EXPECT("\"a\",\"b,c\"\n", "1:<a>|<b,c>;");
	EXPECT("\"say \"\"hi\"\"\",x\n", "1:<say \"hi\">|x;");
	EXPECT("\"\"\"\"\n", "1:<\">;");
	EXPECT("\"\",\n", "1:<>|;");
	EXPECT("\"\"", "1:<>;");
	EXPECT("x,\"\"\n", "1:x|<>;");
	EXPECT("\"a\"\"\",\"\"\"b\"\n", "1:<a\">|<\"b>;");
}

Test(lexer, newlines_in_quotes)
{
	EXPECT("a,b\n\"1\n2\",3\n4,5\n", "1:a|b;2:<1\n2>|3;4:4|5;");
	EXPECT("\"x\r\ny\"\r\nz\r\n", "1:<x\r\ny>;3:z;");
	EXPECT("\"\n\n\"\nq\n", "1:<\n\n>;4:q;");
	EXPECT("\"a\rb\"\nq\n", "1:<a\rb>;3:q;");
}

Test(lexer, errors)
{
	EXPECT_FAIL("a,b\n\"1,2\n", "t.csv: line 2, column 1: quoted field not closed before the end of the file");
	EXPECT_FAIL("a,\"b\"c\n", "t.csv: line 1, column 2: character after a closing quote (a quote inside a field must be doubled)");
	EXPECT_FAIL("a\nb\"c\n", "t.csv: line 2, column 1: quote inside an unquoted field (quote the whole field and double the quote)");
	EXPECT_FAIL("a,b\n1,2\n3,\"x\n\ny\"z\n", "t.csv: line 5, column 2: character after a closing quote (a quote inside a field must be doubled)");
}

Test(lexer, nul_bytes_are_data)
{
	static const char in[] = "a\0b,c\n";

	expect(in, sizeof(in) - 1, "1:a|c;");
}

Test(lexer, long_record_grows_buffer)
{
	size_t n = 100000;
	char *in = malloc(n + 8);
	struct tfs__csv_lexer lx;
	struct tfs_diag d;
	bool got;

	cr_assert(in);
	memset(in, 'x', n);
	memcpy(in + n, ",y\nz\n", 6);
	tfs_diag_init(&d);
	tfs__csv_open_mem(&lx, in, n + 5, "t.csv", 7);
	cr_assert_eq(tfs__csv_next(&lx, &got, &d), TFS_E_OK);
	cr_assert(got);
	cr_assert_eq(lx.field_num, 2);
	cr_assert_eq(lx.fields[0].len, n);
	cr_assert_eq(lx.fields[1].len, 1);
	cr_assert_eq(tfs__csv_next(&lx, &got, &d), TFS_E_OK);
	cr_assert(got);
	cr_assert_eq(lx.record_line, 2);
	cr_assert_eq(tfs__csv_next(&lx, &got, &d), TFS_E_OK);
	cr_assert(!got);
	tfs__csv_close(&lx);
	free(in);
}

Test(lexer, missing_file)
{
	struct tfs__csv_lexer lx;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs__csv_open(&lx, "/nonexistent/x.csv", "x.csv", 0, &d),
		     TFS_E_NOT_FOUND);
	cr_assert(strstr(d.msg, "x.csv: cannot open") == d.msg, "%s", d.msg);
	tfs__csv_close(&lx);
}

/* Random records of random fields (plain, quoted with commas, quotes,
 * CR/LF inside, empty), written as RFC 4180 text with LF or CRLF line
 * ends, tokenize back to the same fields at every block size; this
 * crosses the eight-byte scan at every alignment. */
Test(lexer, random_round_trip)
{
	static const char alphabet[] = "ab1,\"\n\r -.x";
	struct tfs_buf text, want;

	srand(12345);
	for (int round = 0; round < 200; round++) {
		unsigned records = 1 + (unsigned)rand() % 8;

		tfs_buf_init(&text, TFS_BUF_NO_MAX);
		tfs_buf_init(&want, TFS_BUF_NO_MAX);
		uint64_t line = 1;

		for (unsigned r = 0; r < records; r++) {
			unsigned fields = 1 + (unsigned)rand() % 5;
			bool crlf = rand() % 2;
			uint64_t start = line;
			struct tfs_buf rec;

			tfs_buf_init(&rec, TFS_BUF_NO_MAX);
			for (unsigned f = 0; f < fields; f++) {
				char v[40];
				unsigned n = (unsigned)rand() % 20;
				bool special = false, quote;

				for (unsigned k = 0; k < n; k++) {
					v[k] = alphabet[rand() % (sizeof(alphabet) - 1)];
					special |= v[k] == ',' || v[k] == '"' || v[k] == '\n' ||
						   v[k] == '\r';
				}
				/* A record of one empty field would be a blank line. */
				quote = special || rand() % 4 == 0 || (fields == 1 && n == 0);
				if (f)
					cr_assert(!tfs_buf_append_u8(&text, ','));
				if (quote)
					cr_assert(!tfs_buf_append_u8(&text, '"'));
				for (unsigned k = 0; k < n; k++) {
					if (v[k] == '"')
						cr_assert(!tfs_buf_append_u8(&text, '"'));
					cr_assert(!tfs_buf_append_u8(&text, (uint8_t)v[k]));
					/* Line breaks inside quotes count as lines. */
					if (v[k] == '\n' || (v[k] == '\r' && (k + 1 == n || v[k + 1] != '\n')))
						line++;
				}
				if (quote)
					cr_assert(!tfs_buf_append_u8(&text, '"'));
				cr_assert(!tfs_buf_printf(&rec, "%s%s%.*s%s", f ? "|" : "",
							  quote ? "<" : "", (int)n, v,
							  quote ? ">" : ""));
			}
			cr_assert(!tfs_buf_append(&text, crlf ? "\r\n" : "\n", crlf ? 2 : 1));
			line++;
			cr_assert(!tfs_buf_printf(&want, "%llu:%.*s;", (unsigned long long)start,
						  (int)rec.len, (const char *)rec.data));
			tfs_buf_release(&rec);
		}
		cr_assert(!tfs_buf_append_u8(&want, 0));
		expect((const char *)text.data, text.len, (const char *)want.data);
		tfs_buf_release(&text);
		tfs_buf_release(&want);
	}
}

Test(lexer, message_text_escapes_and_cuts)
{
	char out[16];

	cr_assert_str_eq(tfs__msg_text(out, sizeof(out), "ab", 2), "ab");
	cr_assert_str_eq(tfs__msg_text(out, sizeof(out), "a\nb\\", 4), "a\\x0ab\\x5c");
	cr_assert_str_eq(tfs__msg_text(out, sizeof(out), "0123456789abcdefgh", 18),
			 "0123456789ab...");
	cr_assert_str_eq(tfs__msg_text(out, sizeof(out), "\n\n\n\n", 4), "\\x0a\\x0a\\x0a...");
	cr_assert_str_eq(tfs__msg_text(out, 8, "\n\n", 2), "\\x0a...");
	for (size_t cap = 8; cap <= sizeof(out); cap++) {
		tfs__msg_text(out, cap, "\x01\x02\x03\x04\x05xyzxyz", 11);
		cr_assert_lt(strlen(out), cap);
	}
}

/* With a field limit the rest of a record is skipped only when no quote
 * and no lone CR could hide a line break in it; line numbers stay exact. */
Test(lexer, field_limit_skips_only_plain_rests)
{
	field_limit = 1;
	EXPECT("a,b,c\n1,2,3\r\n4,\"x\ny\",5\n6,7\r8\n9\n10,11",
	       "1:a;2:1;3:4|<x\ny>;5:6|7;6:8;7:9;8:10|11;");
	field_limit = 2;
	EXPECT("a,b,c\n1,2\n", "1:a|b;2:1|2;");
	field_limit = 0;
}
