/* The parts of the S3 backend that need no server: settings from the
 * environment and the AWS files, s3:// URIs, ListObjectsV2 pages with
 * their continuation tokens, error bodies, the retry decision and backoff,
 * key encoding and normalisation. */
#include <criterion/criterion.h>

#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "s3_internal.h"
#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_s3.h"

/* ---- a fake environment ------------------------------------------------- */

struct env {
	const char *kv[32]; /* name, value, name, value, ..., NULL */
};

static const char *env_get(void *ctx, const char *name)
{
	struct env *e = ctx;

	for (unsigned i = 0; e->kv[i]; i += 2)
		if (!strcmp(e->kv[i], name))
			return e->kv[i + 1];
	return NULL;
}

static char tmpdir[256];

static void make_tmp(void)
{
	cr_assert_not_null(tfs_temp_template(tmpdir, sizeof(tmpdir), "/tmp",
					     "tfs-s3cfg-"));
	cr_assert_not_null(mkdtemp(tmpdir));
}

static char *write_file(const char *name, const char *text)
{
	size_t n = strlen(tmpdir) + strlen(name) + 2;
	char *p = malloc(n);
	FILE *f;

	snprintf(p, n, "%s/%s", tmpdir, name);
	f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
	return p;
}

static const char CREDS[] =
	"# comment\n"
	"[default]\n"
	"aws_access_key_id = DEFKEY\n"
	"aws_secret_access_key = defsecret\n"
	"\n"
	"[other]\n"
	"aws_access_key_id=OTHERKEY\n"
	"aws_secret_access_key=othersecret\n"
	"aws_session_token = othertoken\n";

static const char CONFIG[] =
	"[default]\n"
	"region = eu-west-3\n"
	"[profile other]\n"
	"region = ap-south-1\n"
	"endpoint_url = http://127.0.0.1:9000/\n"
	"s3 =\n"
	"  addressing_style = virtual\n";

Test(s3_config, environment_wins)
{
	struct env e = {{"AWS_ACCESS_KEY_ID", "ENVKEY", "AWS_SECRET_ACCESS_KEY",
			 "envsecret", "AWS_SESSION_TOKEN", "tok",
			 "AWS_ENDPOINT_URL", "http://localhost:7480/",
			 "AWS_DEFAULT_REGION", "us-west-2", "HOME", "/nonexistent",
			 NULL}};
	struct tfs_s3_config c;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_s3_config_load_env(&c, NULL, env_get, &e, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	cr_assert_str_eq(c.access_key, "ENVKEY");
	cr_assert_str_eq(c.secret_key, "envsecret");
	cr_assert_str_eq(c.session_token, "tok");
	cr_assert_str_eq(c.endpoint, "http://localhost:7480");
	cr_assert_str_eq(c.region, "us-west-2");
	cr_assert(c.path_style, "a custom endpoint means path-style");
	cr_assert(c.verify_tls);
	tfs_s3_config_release(&c);
	cr_assert_null(c.access_key);
}

Test(s3_config, endpoint_s3_before_generic_and_region_order)
{
	struct env e = {{"AWS_ENDPOINT_URL", "http://a:1", "AWS_ENDPOINT_URL_S3",
			 "https://b:2", "AWS_REGION", "r1", "AWS_DEFAULT_REGION",
			 "r2", NULL}};
	struct tfs_s3_config c;

	cr_assert_eq(tfs_s3_config_load_env(&c, NULL, env_get, &e, NULL),
		     TFS_E_OK);
	cr_assert_str_eq(c.endpoint, "https://b:2");
	cr_assert_str_eq(c.region, "r1");
	cr_assert_null(c.access_key, "no credentials anywhere: anonymous");
	tfs_s3_config_release(&c);
}

Test(s3_config, aws_default_endpoint_is_virtual_hosted)
{
	struct env e = {{"AWS_REGION", "eu-central-1", NULL}};
	struct tfs_s3_config c;

	cr_assert_eq(tfs_s3_config_load_env(&c, NULL, env_get, &e, NULL),
		     TFS_E_OK);
	cr_assert_str_eq(c.endpoint, "https://s3.eu-central-1.amazonaws.com");
	cr_assert(!c.path_style);
	tfs_s3_config_release(&c);
}

Test(s3_config, files_and_profiles)
{
	struct tfs_s3_config c;
	struct tfs_diag d;
	char *cred, *conf;

	make_tmp();
	cred = write_file("credentials", CREDS);
	conf = write_file("config", CONFIG);
	{
		struct env e = {{"AWS_SHARED_CREDENTIALS_FILE", cred,
				 "AWS_CONFIG_FILE", conf, NULL}};

		tfs_diag_init(&d);
		cr_assert_eq(tfs_s3_config_load_env(&c, NULL, env_get, &e, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_str_eq(c.access_key, "DEFKEY");
		cr_assert_str_eq(c.secret_key, "defsecret");
		cr_assert_null(c.session_token);
		cr_assert_str_eq(c.region, "eu-west-3");
		tfs_s3_config_release(&c);
	}
	{
		struct env e = {{"AWS_SHARED_CREDENTIALS_FILE", cred,
				 "AWS_CONFIG_FILE", conf, "AWS_PROFILE",
				 "other", NULL}};

		cr_assert_eq(tfs_s3_config_load_env(&c, NULL, env_get, &e, &d),
			     TFS_E_OK);
		cr_assert_str_eq(c.access_key, "OTHERKEY");
		cr_assert_str_eq(c.session_token, "othertoken");
		cr_assert_str_eq(c.region, "ap-south-1");
		cr_assert_str_eq(c.endpoint, "http://127.0.0.1:9000");
		cr_assert(!c.path_style, "addressing_style = virtual");
		tfs_s3_config_release(&c);
	}
	unlink(cred);
	unlink(conf);
	rmdir(tmpdir);
	free(cred);
	free(conf);
}

Test(s3_config, home_files_and_overrides)
{
	struct tfs_s3_config c;
	struct tfs_diag d;
	char *cred, *conf, *aws;
	struct tfs_s3_opts o = {"http://10.0.0.1:1234", "xx-1", "virtual", 0,
				NULL, NULL};

	make_tmp();
	aws = malloc(strlen(tmpdir) + 8);
	snprintf(aws, strlen(tmpdir) + 8, "%s/.aws", tmpdir);
	cr_assert_eq(mkdir(aws, 0700), 0);
	cred = write_file(".aws/credentials", CREDS);
	conf = write_file(".aws/config", CONFIG);
	{
		struct env e = {{"HOME", tmpdir, "AWS_ENDPOINT_URL",
				 "http://ignored:1", NULL}};

		tfs_diag_init(&d);
		cr_assert_eq(tfs_s3_config_load_env(&c, &o, env_get, &e, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
		cr_assert_str_eq(c.access_key, "DEFKEY");
		cr_assert_str_eq(c.endpoint, "http://10.0.0.1:1234");
		cr_assert_str_eq(c.region, "xx-1");
		cr_assert(!c.path_style);
		cr_assert(!c.verify_tls);
		tfs_s3_config_release(&c);
	}
	{
		/* An explicit credentials file wins over the environment. */
		struct env e = {{"HOME", "/nonexistent", "AWS_ACCESS_KEY_ID", "E",
				 "AWS_SECRET_ACCESS_KEY", "F", NULL}};
		struct tfs_s3_opts o2 = {NULL, NULL, "path", -1, cred, "other"};

		cr_assert_eq(tfs_s3_config_load_env(&c, &o2, env_get, &e, &d),
			     TFS_E_OK);
		cr_assert_str_eq(c.access_key, "OTHERKEY");
		cr_assert(c.path_style);
		cr_assert(c.verify_tls);
		tfs_s3_config_release(&c);
	}
	unlink(cred);
	unlink(conf);
	rmdir(aws);
	rmdir(tmpdir);
	free(cred);
	free(conf);
	free(aws);
}

Test(s3_config, bad_settings)
{
	struct env e = {{NULL}};
	struct tfs_s3_config c;
	struct tfs_diag d;
	struct tfs_s3_opts bad_addr = {NULL, NULL, "sideways", -1, NULL, NULL};
	struct tfs_s3_opts bad_ep = {"ftp://x", NULL, NULL, -1, NULL, NULL};
	struct tfs_s3_opts no_file = {NULL, NULL, NULL, -1, "/nonexistent/c",
				      NULL};

	tfs_diag_init(&d);
	cr_assert_eq(tfs_s3_config_load_env(&c, &bad_addr, env_get, &e, &d),
		     TFS_E_INVALID);
	cr_assert(strstr(d.msg, "sideways"));
	tfs_s3_config_release(&c);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_s3_config_load_env(&c, &bad_ep, env_get, &e, &d),
		     TFS_E_INVALID);
	tfs_s3_config_release(&c);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_s3_config_load_env(&c, &no_file, env_get, &e, &d),
		     TFS_E_INVALID);
	cr_assert(strstr(d.msg, "/nonexistent/c"));
	tfs_s3_config_release(&c);
}

Test(s3_config, secrets_stay_out_of_messages)
{
	struct env e = {{"AWS_ACCESS_KEY_ID", "AKIDSECRETLOOKING",
			 "AWS_SECRET_ACCESS_KEY", "topsecretvalue",
			 "AWS_ENDPOINT_URL", "gopher://nope", NULL}};
	struct tfs_s3_config c;
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(tfs_s3_config_load_env(&c, NULL, env_get, &e, &d),
		     TFS_E_INVALID);
	cr_assert_null(strstr(d.msg, "topsecretvalue"));
	tfs_s3_config_release(&c);
}

/* ---- URIs and keys ------------------------------------------------------ */

Test(s3_uri, parse)
{
	static const struct {
		const char *uri, *bucket, *path;
	} ok[] = {
		{"s3://bkt", "bkt", "/"},
		{"s3://bkt/", "bkt", "/"},
		{"s3://bkt/a/b", "bkt", "/a/b"},
		{"s3://bkt//a//b/", "bkt", "/a/b"},
		{"s3://my.bucket-1/arrays/x y", "my.bucket-1", "/arrays/x y"},
	};
	static const char *const bad[] = {
		"s3://", "s3:///x", "http://bkt/x", "s3://b k/x", "bkt/x",
		"s3://aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		char *b, *p;
		struct tfs_diag d;

		tfs_diag_init(&d);
		cr_assert_eq(tfs_s3_uri_parse(ok[i].uri, &b, &p, &d), TFS_E_OK,
			     "%s: %s", ok[i].uri, tfs_diag_msg(&d));
		cr_assert_str_eq(b, ok[i].bucket);
		cr_assert_str_eq(p, ok[i].path, "%s", ok[i].uri);
		tfs_free(b);
		tfs_free(p);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *b = (char *)"x", *p = (char *)"x";

		cr_assert_eq(tfs_s3_uri_parse(bad[i], &b, &p, NULL),
			     TFS_E_INVALID, "%s", bad[i]);
		cr_assert_null(b);
		cr_assert_null(p);
	}
	cr_assert(tfs_s3_is_uri("s3://x"));
	cr_assert(!tfs_s3_is_uri("/s3://x"));
	cr_assert(!tfs_s3_is_uri(NULL));
}

Test(s3_util, key_and_encode)
{
	static const char *const keys[][2] = {
		{"/a//b/", "a/b"}, {"/", ""}, {"", ""}, {"a", "a"},
		{"//x///y", "x/y"},
	};
	char *k;

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		k = tfs__s3_key(keys[i][0]);
		cr_assert_str_eq(k, keys[i][1]);
		tfs_free(k);
	}
	k = tfs__s3_encode("a b/c~d_e.f-g+h=\xc3\xa9", true);
	cr_assert_str_eq(k, "a%20b/c~d_e.f-g%2Bh%3D%C3%A9");
	tfs_free(k);
	k = tfs__s3_encode("a/b", false);
	cr_assert_str_eq(k, "a%2Fb");
	tfs_free(k);
	k = tfs__s3_encode("", false);
	cr_assert_str_eq(k, "");
	tfs_free(k);
}

Test(s3_util, time)
{
	int64_t ns;

	cr_assert(tfs__s3_parse_time("1970-01-01T00:00:01.500Z", &ns));
	cr_assert_eq(ns, 1500000000);
	cr_assert(tfs__s3_parse_time("2024-02-29T12:00:00Z", &ns));
	cr_assert_eq(ns, INT64_C(1709208000) * 1000000000);
	cr_assert(!tfs__s3_parse_time("2024-02-29 12:00:00Z", &ns));
	cr_assert(!tfs__s3_parse_time("2024-02-29T12:00:00", &ns));
	cr_assert(!tfs__s3_parse_time("yesterday", &ns));
}

/* ---- retries ------------------------------------------------------------ */

Test(s3_retry, decision)
{
	static const struct {
		int cc;
		long status;
		const char *code;
		bool retry;
	} cases[] = {
		{CURLE_OK, 200, "", false},
		{CURLE_OK, 404, "NoSuchKey", false},
		{CURLE_OK, 403, "SignatureDoesNotMatch", false},
		{CURLE_OK, 412, "PreconditionFailed", false},
		{CURLE_OK, 400, "InvalidArgument", false},
		{CURLE_OK, 400, "RequestTimeout", true},
		{CURLE_OK, 500, "InternalError", true},
		{CURLE_OK, 502, "", true},
		{CURLE_OK, 503, "SlowDown", true},
		{CURLE_OK, 504, "", true},
		{CURLE_OK, 429, "", true},
		{CURLE_RECV_ERROR, 0, "", true},
		{CURLE_SEND_ERROR, 0, "", true},
		{CURLE_OPERATION_TIMEDOUT, 0, "", true},
		{CURLE_PARTIAL_FILE, 200, "", true},
		{CURLE_GOT_NOTHING, 0, "", true},
		{CURLE_COULDNT_CONNECT, 0, "", true},
		{CURLE_URL_MALFORMAT, 0, "", false},
		{CURLE_UNSUPPORTED_PROTOCOL, 0, "", false},
		{CURLE_OUT_OF_MEMORY, 0, "", false},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_assert_eq(tfs__s3_retryable(cases[i].cc, cases[i].status,
					       cases[i].code),
			     cases[i].retry, "case %zu", i);
}

Test(s3_retry, backoff)
{
	/* The ceiling doubles from base up to cap; the delay is jittered
	 * below it and never 0. */
	cr_assert_eq(tfs__s3_backoff_ms(0, 50, 4000, 0xffffffffu), 0);
	cr_assert_eq(tfs__s3_backoff_ms(1, 50, 4000, 0xffffffffu), 49);
	cr_assert_eq(tfs__s3_backoff_ms(2, 50, 4000, 0xffffffffu), 99);
	cr_assert_eq(tfs__s3_backoff_ms(4, 50, 4000, 0xffffffffu), 399);
	cr_assert_eq(tfs__s3_backoff_ms(30, 50, 4000, 0xffffffffu), 3999);
	cr_assert_eq(tfs__s3_backoff_ms(3, 50, 4000, 0x80000000u), 100);
	cr_assert_eq(tfs__s3_backoff_ms(5, 50, 4000, 0), 1);
	cr_assert_eq(tfs__s3_backoff_ms(200, 50, 4000, 0x40000000u), 1000);
}

/* ---- XML ---------------------------------------------------------------- */

static const char PAGE1[] =
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
	"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	"<Name>b</Name><Prefix>arr/</Prefix><KeyCount>3</KeyCount>"
	"<MaxKeys>3</MaxKeys><Delimiter>/</Delimiter>"
	"<IsTruncated>true</IsTruncated>"
	"<NextContinuationToken>tok+/=1</NextContinuationToken>"
	"<Contents><Key>arr/__schema</Key><LastModified>2024-01-02T03:04:05.000Z"
	"</LastModified><ETag>&quot;abc&quot;</ETag><Size>0</Size>"
	"<StorageClass>STANDARD</StorageClass></Contents>"
	"<Contents><Key>arr/a&amp;b &lt;c&gt;</Key><Size>123456789012</Size>"
	"</Contents>"
	"<CommonPrefixes><Prefix>arr/__fragments/</Prefix></CommonPrefixes>"
	"</ListBucketResult>";

static const char PAGE2[] =
	"<ListBucketResult><IsTruncated>false</IsTruncated>"
	"<CommonPrefixes><Prefix>arr/__commits/</Prefix></CommonPrefixes>"
	"<Contents><Key>arr/z</Key><Size>7</Size></Contents>"
	"</ListBucketResult>";

Test(s3_xml, list_pages)
{
	struct tfs__s3_listing l;
	struct tfs_diag d;

	tfs__s3_listing_init(&l);
	tfs_diag_init(&d);
	cr_assert_eq(tfs__s3_parse_list(PAGE1, strlen(PAGE1), &l, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	cr_assert(l.truncated);
	cr_assert_str_eq(l.next_token, "tok+/=1");
	cr_assert_eq(l.nobjects, 2);
	cr_assert_str_eq(l.objects[0].key, "arr/__schema");
	cr_assert_eq(l.objects[0].size, 0);
	cr_assert_eq(l.objects[0].mtime_ns, INT64_C(1704164645) * 1000000000);
	cr_assert_str_eq(l.objects[1].key, "arr/a&b <c>");
	cr_assert_eq(l.objects[1].size, UINT64_C(123456789012));
	cr_assert_eq(l.nprefixes, 1);
	cr_assert_str_eq(l.prefixes[0], "arr/__fragments/");

	/* The next page appends and ends the listing. */
	cr_assert_eq(tfs__s3_parse_list(PAGE2, strlen(PAGE2), &l, &d), TFS_E_OK);
	cr_assert(!l.truncated);
	cr_assert_null(l.next_token);
	cr_assert_eq(l.nobjects, 3);
	cr_assert_str_eq(l.objects[2].key, "arr/z");
	cr_assert_eq(l.nprefixes, 2);
	cr_assert_str_eq(l.prefixes[1], "arr/__commits/");
	tfs__s3_listing_release(&l);
}

Test(s3_xml, list_bad)
{
	static const char *const bad[] = {
		"",
		"<ListBucketResult><Contents><Key>a</Key>",
		"<Error><Code>NoSuchBucket</Code></Error>",
		"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size>"
		"</Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Size>1</Size></Contents>"
		"</ListBucketResult>",
		"not xml at all",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct tfs__s3_listing l;
		struct tfs_diag d;

		tfs__s3_listing_init(&l);
		tfs_diag_init(&d);
		cr_assert_eq(tfs__s3_parse_list(bad[i], strlen(bad[i]), &l, &d),
			     TFS_E_CORRUPT, "case %zu", i);
		tfs__s3_listing_release(&l);
	}
}

Test(s3_xml, error_and_values)
{
	static const char err[] =
		"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
		"<Message>Please\nreduce your rate</Message>"
		"<RequestId>x</RequestId></Error>";
	static const char up[] =
		"<InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key>"
		"<UploadId>2~abc.def</UploadId></InitiateMultipartUploadResult>";
	char code[8], msg[64];
	char *v;

	tfs__s3_parse_error(err, strlen(err), code, sizeof(code), msg,
			    sizeof(msg));
	cr_assert_str_eq(code, "SlowDow", "truncated to its cap");
	cr_assert_str_eq(msg, "Please reduce your rate");
	tfs__s3_parse_error("<html>", 6, code, sizeof(code), msg, sizeof(msg));
	cr_assert_str_eq(code, "");
	cr_assert_str_eq(msg, "");
	v = tfs__s3_xml_text(up, strlen(up), "UploadId");
	cr_assert_str_eq(v, "2~abc.def");
	tfs_free(v);
	cr_assert_null(tfs__s3_xml_text(up, strlen(up), "Nope"));
}

Test(s3_vfs, new_needs_no_network)
{
	struct tfs_s3_config c = {0};
	struct tfs_vfs *v;
	struct tfs_diag d;
	unsigned long req, ret;

	c.endpoint = (char *)"http://127.0.0.1:1";
	c.region = (char *)"us-east-1";
	c.path_style = true;
	c.timeout_ms = 2000;
	c.connect_timeout_ms = 500;
	c.retries = 2;
	c.backoff_base_ms = 1;
	c.backoff_cap_ms = 2;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_s3_new(&c, "bkt", &v, &d), TFS_E_OK);
	/* Nothing listens on port 1: a clear error after the retries, no
	 * hang. */
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_s3_check(v, &d), TFS_E_IO);
	cr_assert(strstr(d.msg, "unreachable"), "%s", d.msg);
	tfs_vfs_s3_counters(v, &req, &ret);
	cr_assert_eq(req, 3);
	cr_assert_eq(ret, 2);
	tfs_vfs_free(v);
}

/* ---- against a real server (TFS_S3_TEST_URI, else skipped) -------------- */

struct live {
	struct tfs_vfs *a, *b; /* two backends on one bucket: two machines */
	char *root;
};

static void live_open(struct live *l, const char *name)
{
	const char *uri = getenv("TFS_S3_TEST_URI");
	struct tfs_diag d;
	char *r2;

	if (!uri || !*uri)
		cr_skip_test("TFS_S3_TEST_URI is not set");
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_s3_open_uri(uri, NULL, &l->a, &l->root, &d),
		     TFS_E_OK, "%s", tfs_diag_msg(&d));
	cr_assert_eq(tfs_vfs_s3_open_uri(uri, NULL, &l->b, &r2, &d), TFS_E_OK,
		     "%s", tfs_diag_msg(&d));
	tfs_free(r2);
	{
		size_t n = strlen(l->root) + strlen(name) + 32;
		char *sub = tfs_malloc(n);

		snprintf(sub, n, "%s/%s-%ld", l->root, name, (long)getpid());
		tfs_free(l->root);
		l->root = sub;
	}
}

static void live_close(struct live *l)
{
	tfs_vfs_free(l->a);
	tfs_vfs_free(l->b);
	tfs_free(l->root);
}

static char *lp(struct live *l, const char *name)
{
	char *p = tfs_path_join(l->root, name);

	cr_assert_not_null(p);
	return p;
}

static void durable_put(struct tfs_vfs *v, const char *path, const void *data,
			size_t len)
{
	struct tfs_diag d;

	tfs_diag_init(&d);
	cr_assert_eq(v->ops->write(v, path, data, len, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert_eq(v->ops->fsync(v, path, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
}

Test(s3_live, durable_writes_seen_by_another_backend)
{
	struct live l;
	struct tfs_diag d;
	struct tfs_stat st;
	struct tfs_dirlist ls;
	char *dir, *f, *g, buf[8];

	live_open(&l, "dur");
	dir = lp(&l, "arr");
	f = lp(&l, "arr/__fragments/one");
	g = lp(&l, "arr/__fragments/two");
	tfs_diag_init(&d);
	{
		char *frag = lp(&l, "arr/__fragments");

		/* mkdir makes the parents too: folders are only names. */
		cr_assert_eq(l.a->ops->mkdir(l.a, frag, &d), TFS_E_OK);
		tfs_free(frag);
	}
	/* Nothing on the server yet: the other backend sees no folder. */
	cr_assert_eq(tfs_vfs_stat(l.b, dir, &st, &d), TFS_E_OK);
	cr_assert(!st.exists);
	durable_put(l.a, f, "hello world", 11);
	/* b remembers its answers for up to a second (STAT_TTL_NS), then
	 * asks again. */
	cr_assert_eq(tfs_vfs_stat(l.b, dir, &st, &d), TFS_E_OK);
	cr_assert(!st.exists, "the answer of a moment ago");
	usleep(1100 * 1000);
	/* Unsent bytes are the writer's only. */
	cr_assert_eq(l.a->ops->write(l.a, g, "pending", 7, &d), TFS_E_OK);
	cr_assert_eq(tfs_vfs_stat(l.b, g, &st, &d), TFS_E_OK);
	cr_assert(!st.exists);

	cr_assert_eq(tfs_vfs_stat(l.b, f, &st, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert(st.exists && !st.is_dir && st.size == 11);
	cr_assert_gt(st.mtime_ns, 0);
	cr_assert_eq(tfs_vfs_stat(l.b, dir, &st, &d), TFS_E_OK);
	cr_assert(st.exists && st.is_dir, "a prefix in use is a folder");
	cr_assert_eq(tfs_vfs_read(l.b, f, 6, buf, 5, &d), TFS_E_OK);
	cr_assert_arr_eq(buf, "world", 5);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(l.b, f, 8, buf, 5, &d), TFS_E_CORRUPT);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_read(l.b, f, 11, buf, 1, &d), TFS_E_CORRUPT);
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_list(l.b, dir, &ls, &d), TFS_E_OK);
	cr_assert_eq(ls.count, 1);
	cr_assert_str_eq(ls.names[0], "__fragments");
	tfs_dirlist_release(&ls);

	cr_assert_eq(l.a->ops->fsync(l.a, g, &d), TFS_E_OK);
	cr_assert_eq(tfs_vfs_list(l.b, dir, &ls, &d), TFS_E_OK);
	tfs_dirlist_release(&ls);
	{
		char *frag = lp(&l, "arr/__fragments");

		cr_assert_eq(tfs_vfs_list(l.b, frag, &ls, &d), TFS_E_OK);
		cr_assert_eq(ls.count, 2);
		cr_assert_str_eq(ls.names[0], "one");
		cr_assert_str_eq(ls.names[1], "two");
		tfs_dirlist_release(&ls);
		/* A folder with objects is not removed; its objects are. */
		tfs_diag_init(&d);
		cr_assert_eq(l.b->ops->remove(l.b, frag, &d), TFS_E_EXISTS);
		cr_assert_eq(l.b->ops->remove(l.b, f, &d), TFS_E_OK);
		cr_assert_eq(l.b->ops->remove(l.b, g, &d), TFS_E_OK);
		/* b emptied the folder and a made it: for both it stays, empty
		 * (as on POSIX); a third backend sees no objects, no folder. */
		cr_assert_eq(tfs_vfs_stat(l.b, frag, &st, &d), TFS_E_OK);
		cr_assert(st.exists && st.is_dir);
		{
			struct tfs_vfs *c;
			char *r;

			cr_assert_eq(tfs_vfs_s3_open_uri(getenv("TFS_S3_TEST_URI"),
							 NULL, &c, &r, &d),
				     TFS_E_OK);
			cr_assert_eq(tfs_vfs_stat(c, frag, &st, &d), TFS_E_OK);
			cr_assert(!st.exists);
			tfs_vfs_free(c);
			tfs_free(r);
		}
		cr_assert_eq(tfs_vfs_stat(l.a, frag, &st, &d), TFS_E_OK);
		cr_assert(st.exists && st.is_dir);
		cr_assert_eq(tfs_vfs_list(l.a, frag, &ls, &d), TFS_E_OK);
		cr_assert_eq(ls.count, 0);
		tfs_free(frag);
	}
	tfs_free(dir);
	tfs_free(f);
	tfs_free(g);
	live_close(&l);
}

Test(s3_live, commit_objects_are_written_once)
{
	struct live l;
	struct tfs_diag d;
	char *c;

	live_open(&l, "once");
	c = lp(&l, "arr/__commits/__1_1_abc_22.wrt");
	{
		char *cd = lp(&l, "arr/__commits");

		tfs_diag_init(&d);
		cr_assert_eq(l.a->ops->mkdir(l.a, cd, &d), TFS_E_OK);
		cr_assert_eq(l.b->ops->mkdir(l.b, cd, &d), TFS_E_OK);
		tfs_free(cd);
	}
	durable_put(l.a, c, "", 0);
	tfs_diag_init(&d);
	cr_assert_eq(l.b->ops->write(l.b, c, "x", 1, &d), TFS_E_OK);
	cr_assert_eq(l.b->ops->fsync(l.b, c, &d), TFS_E_EXISTS);
	cr_assert(strstr(d.msg, "already exists"), "%s", d.msg);
	{
		struct tfs_stat st;

		cr_assert_eq(tfs_vfs_stat(l.a, c, &st, &d), TFS_E_OK);
		cr_assert_eq(st.size, 0, "the first commit stays");
	}
	tfs_diag_init(&d);
	cr_assert_eq(l.a->ops->remove(l.a, c, &d), TFS_E_OK);
	tfs_free(c);
	live_close(&l);
}

Test(s3_live, multipart_and_split_reads, .timeout = 120)
{
	struct live l;
	struct tfs_diag d;
	struct tfs_stat st;
	const size_t chunk = 1u << 20, total = 21 * chunk + 12345;
	uint8_t *data = malloc(total), *back = malloc(total);
	char *f;
	unsigned long req0, ret0, req1, ret1;

	live_open(&l, "mp");
	for (size_t i = 0; i < total; i++)
		data[i] = (uint8_t)((i * 2654435761u) >> 13);
	f = lp(&l, "big/a0.tdb");
	tfs_diag_init(&d);
	{
		char *big = lp(&l, "big");

		cr_assert_eq(l.a->ops->mkdir(l.a, big, &d), TFS_E_OK);
		tfs_free(big);
	}
	tfs_vfs_s3_counters(l.a, &req0, &ret0);
	for (size_t off = 0; off < total; off += chunk) {
		size_t n = total - off < chunk ? total - off : chunk;

		cr_assert_eq(l.a->ops->append(l.a, f, data + off, n, &d),
			     TFS_E_OK, "%s", tfs_diag_msg(&d));
	}
	cr_assert_eq(l.a->ops->fsync(l.a, f, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	tfs_vfs_s3_counters(l.a, &req1, &ret1);
	/* create + 2 parts while appending, 1 last part + complete
	 * (the parent check may add a listing). */
	cr_assert_geq(req1 - req0, 5);
	cr_assert_leq(req1 - req0, 7);
	cr_assert_eq(tfs_vfs_stat(l.b, f, &st, &d), TFS_E_OK);
	cr_assert_eq(st.size, total);
	memset(back, 0, total);
	cr_assert_eq(tfs_vfs_read(l.b, f, 0, back, total, &d), TFS_E_OK, "%s",
		     tfs_diag_msg(&d));
	cr_assert(!memcmp(back, data, total));
	/* Across the part boundary. */
	cr_assert_eq(tfs_vfs_read(l.b, f, (8u << 20) - 3, back, 7, &d),
		     TFS_E_OK);
	cr_assert(!memcmp(back, data + (8u << 20) - 3, 7));
	/* Server-side rename of a folder moves every key. */
	{
		char *from = lp(&l, "big"), *to = lp(&l, "moved");
		char *nf = lp(&l, "moved/a0.tdb");

		cr_assert_eq(l.b->ops->rename(l.b, from, to, &d), TFS_E_OK, "%s",
			     tfs_diag_msg(&d));
		cr_assert_eq(tfs_vfs_stat(l.a, nf, &st, &d), TFS_E_OK);
		cr_assert_eq(st.size, total);
		cr_assert_eq(tfs_vfs_stat(l.a, f, &st, &d), TFS_E_OK);
		cr_assert(!st.exists);
		cr_assert_eq(l.a->ops->remove(l.a, nf, &d), TFS_E_OK);
		tfs_free(from);
		tfs_free(to);
		tfs_free(nf);
	}
	free(data);
	free(back);
	tfs_free(f);
	live_close(&l);
}

Test(s3_live, clear_errors)
{
	const char *uri = getenv("TFS_S3_TEST_URI");
	struct tfs_s3_opts bad_key = {NULL, NULL, NULL, -1, NULL, NULL};
	struct tfs_vfs *v;
	struct tfs_diag d;
	char *root, cred[64];
	int fd;

	if (!uri || !*uri)
		cr_skip_test("TFS_S3_TEST_URI is not set");
	cr_assert_not_null(tfs_temp_template(cred, sizeof(cred), "/tmp",
					     "tfs-badcred-"));
	fd = mkstemp(cred);
	cr_assert_geq(fd, 0);
	cr_assert_gt(write(fd, "[default]\naws_access_key_id=nobody\n"
			   "aws_secret_access_key=wrongsecretvalue\n", 74), 0);
	close(fd);
	bad_key.credentials_file = cred;
	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_s3_open_uri(uri, &bad_key, &v, &root, &d),
		     TFS_E_PERM);
	cr_assert(strstr(d.msg, "credentials"), "%s", d.msg);
	cr_assert_null(strstr(d.msg, "wrongsecretvalue"));
	cr_assert_null(v);
	unlink(cred);

	tfs_diag_init(&d);
	cr_assert_eq(tfs_vfs_s3_open_uri("s3://no-such-bucket-tfs/x", NULL, &v,
					 &root, &d),
		     TFS_E_NOT_FOUND);
	cr_assert(strstr(d.msg, "no such bucket"), "%s", d.msg);
}
