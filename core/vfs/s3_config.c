/* Settings of the S3 backend, read the way the AWS CLI and SDKs read them
 * (tfs_s3.h): environment first, then the shared credentials and config
 * files of the profile, then the caller's overrides; and s3:// URIs.
 *
 * The files are INI: "[name]" sections (in the config file "[profile
 * name]", except "[default]"), "key = value" lines, '#' or ';' comments,
 * and indented lines under "s3 =" as nested settings, of which we take
 * addressing_style. */
#include "tfs_s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tfs_alloc.h"

#define FILE_MAX (1u << 20)

static const char *env_get(tfs_s3_env_fn env, void *ctx, const char *name)
{
	const char *v = env(ctx, name);

	return v && *v ? v : NULL;
}

static const char *real_env(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

/* Replaces *dst with a copy of src (NULL stays NULL). */
static bool set_str(char **dst, const char *src)
{
	char *n = NULL;

	if (src && !(n = tfs_strdup(src)))
		return false;
	if (*dst) {
		memset(*dst, 0, strlen(*dst));
		tfs_free(*dst);
	}
	*dst = n;
	return true;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' ||
			 e[-1] == '\n'))
		e--;
	*e = '\0';
	return s;
}

/* What one profile of one file says. */
struct profile_vals {
	char *access_key, *secret_key, *session_token;
	char *region, *endpoint, *addressing;
};

static void vals_release(struct profile_vals *v)
{
	(void)set_str(&v->access_key, NULL);
	(void)set_str(&v->secret_key, NULL);
	(void)set_str(&v->session_token, NULL);
	(void)set_str(&v->region, NULL);
	(void)set_str(&v->endpoint, NULL);
	(void)set_str(&v->addressing, NULL);
}

/* Reads section `profile` of an INI file (config_style: "[profile x]"
 * names sections, but "[default]" and plain "[x]" also match). A missing
 * file is not an error unless required. */
static enum tfs_err read_profile(const char *file, const char *profile,
				 bool config_style, bool required,
				 struct profile_vals *v, struct tfs_diag *d)
{
	FILE *f = fopen(file, "re");
	char line[2048];
	bool in = false;
	size_t total = 0;

	if (!f) {
		if (!required)
			return TFS_E_OK;
		return tfs_fail(d, TFS_E_INVALID,
				"s3: cannot read credentials file '%s'", file);
	}
	while (fgets(line, sizeof(line), f)) {
		char *s = line, *eq, *key, *val;
		bool indented = line[0] == ' ' || line[0] == '\t';

		total += strlen(line);
		if (total > FILE_MAX)
			break;
		s = trim(s);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');
			char *name;

			if (!end) {
				in = false;
				continue;
			}
			*end = '\0';
			name = trim(s + 1);
			if (config_style && !strncmp(name, "profile ", 8))
				name = trim(name + 8);
			in = !strcmp(name, profile);
			continue;
		}
		if (!in || !(eq = strchr(s, '=')))
			continue;
		*eq = '\0';
		key = trim(s);
		val = trim(eq + 1);
		if (indented && strcmp(key, "addressing_style"))
			continue;
		if (!strcmp(key, "aws_access_key_id"))
			(void)set_str(&v->access_key, val);
		else if (!strcmp(key, "aws_secret_access_key"))
			(void)set_str(&v->secret_key, val);
		else if (!strcmp(key, "aws_session_token"))
			(void)set_str(&v->session_token, val);
		else if (!strcmp(key, "region"))
			(void)set_str(&v->region, val);
		else if (!strcmp(key, "endpoint_url"))
			(void)set_str(&v->endpoint, val);
		else if (!strcmp(key, "addressing_style"))
			(void)set_str(&v->addressing, val);
	}
	memset(line, 0, sizeof(line));
	fclose(f);
	return TFS_E_OK;
}

/* "$HOME/.aws/<name>" or NULL. */
static char *home_file(tfs_s3_env_fn env, void *ctx, const char *name)
{
	const char *home = env_get(env, ctx, "HOME");
	size_t n;
	char *p;

	if (!home)
		return NULL;
	n = strlen(home) + strlen(name) + 8;
	p = tfs_malloc(n);
	if (p)
		snprintf(p, n, "%s/.aws/%s", home, name);
	return p;
}

static enum tfs_err check_endpoint(const char *e, struct tfs_diag *d)
{
	const char *host;

	if (!strncmp(e, "http://", 7))
		host = e + 7;
	else if (!strncmp(e, "https://", 8))
		host = e + 8;
	else
		return tfs_fail(d, TFS_E_INVALID,
				"s3: endpoint '%s' is not an http:// or https:// URL",
				e);
	if (!*host || *host == '/')
		return tfs_fail(d, TFS_E_INVALID, "s3: endpoint '%s' has no host",
				e);
	for (const char *p = e; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
			return tfs_fail(d, TFS_E_INVALID,
					"s3: endpoint '%s' is not a plain URL", e);
	return TFS_E_OK;
}

static void set_defaults(struct tfs_s3_config *c)
{
	memset(c, 0, sizeof(*c));
	c->verify_tls = true;
	c->timeout_ms = 30000;
	c->connect_timeout_ms = 5000;
	c->retries = 6;
	c->backoff_base_ms = 50;
	c->backoff_cap_ms = 4000;
}

/* Reads the chosen profile from the credentials and config files; a file
 * that cannot be located (no HOME) is skipped. */
static enum tfs_err read_profiles(const struct tfs_s3_opts *o,
				  tfs_s3_env_fn env, void *ctx,
				  struct profile_vals *cred,
				  struct profile_vals *conf, struct tfs_diag *d)
{
	const char *profile, *v;
	char *cred_file = NULL, *conf_file = NULL;
	enum tfs_err e = TFS_E_OK;

	profile = o->profile ? o->profile : env_get(env, ctx, "AWS_PROFILE");
	if (!profile)
		profile = "default";
	if (o->credentials_file)
		cred_file = tfs_strdup(o->credentials_file);
	else if ((v = env_get(env, ctx, "AWS_SHARED_CREDENTIALS_FILE")))
		cred_file = tfs_strdup(v);
	else
		cred_file = home_file(env, ctx, "credentials");
	if ((v = env_get(env, ctx, "AWS_CONFIG_FILE")))
		conf_file = tfs_strdup(v);
	else
		conf_file = home_file(env, ctx, "config");
	if (cred_file &&
	    (e = read_profile(cred_file, profile, false,
			      o->credentials_file != NULL, cred, d)))
		goto out_free;
	if (conf_file)
		e = read_profile(conf_file, profile, true, false, conf, d);
out_free:
	tfs_free(cred_file);
	tfs_free(conf_file);
	return e;
}

/* Credentials: environment (as a set), else the credentials file, else the
 * config file; an explicit credentials file wins over the environment.
 * Returns false when a copy runs out of memory. */
static bool pick_credentials(struct tfs_s3_config *c,
			     const struct tfs_s3_opts *o, tfs_s3_env_fn env,
			     void *ctx, const struct profile_vals *cred,
			     const struct profile_vals *conf)
{
	bool ok = true;

	if (!o->credentials_file && env_get(env, ctx, "AWS_ACCESS_KEY_ID") &&
	    env_get(env, ctx, "AWS_SECRET_ACCESS_KEY")) {
		ok &= set_str(&c->access_key, env_get(env, ctx, "AWS_ACCESS_KEY_ID"));
		ok &= set_str(&c->secret_key,
			      env_get(env, ctx, "AWS_SECRET_ACCESS_KEY"));
		ok &= set_str(&c->session_token,
			      env_get(env, ctx, "AWS_SESSION_TOKEN"));
	} else if (cred->access_key && cred->secret_key) {
		ok &= set_str(&c->access_key, cred->access_key);
		ok &= set_str(&c->secret_key, cred->secret_key);
		ok &= set_str(&c->session_token, cred->session_token);
	} else if (conf->access_key && conf->secret_key) {
		ok &= set_str(&c->access_key, conf->access_key);
		ok &= set_str(&c->secret_key, conf->secret_key);
		ok &= set_str(&c->session_token, conf->session_token);
	}
	return ok;
}

static const char *pick_region(const struct tfs_s3_opts *o, tfs_s3_env_fn env,
			       void *ctx, const struct profile_vals *conf)
{
	const char *region = o->region;

	if (!region)
		region = env_get(env, ctx, "AWS_REGION");
	if (!region)
		region = env_get(env, ctx, "AWS_DEFAULT_REGION");
	if (!region)
		region = conf->region;
	if (!region)
		region = "us-east-1";
	return region;
}

/* The configured endpoint, or NULL for the region's AWS endpoint. */
static const char *pick_endpoint(const struct tfs_s3_opts *o,
				 tfs_s3_env_fn env, void *ctx,
				 const struct profile_vals *conf)
{
	const char *endpoint = o->endpoint;

	if (!endpoint)
		endpoint = env_get(env, ctx, "AWS_ENDPOINT_URL_S3");
	if (!endpoint)
		endpoint = env_get(env, ctx, "AWS_ENDPOINT_URL");
	if (!endpoint)
		endpoint = conf->endpoint;
	return endpoint;
}

/* Stores the endpoint without trailing slashes, or the AWS default for the
 * region; *ok turns false when a copy runs out of memory. */
static enum tfs_err set_endpoint(struct tfs_s3_config *c, const char *endpoint,
				 bool *ok, struct tfs_diag *d)
{
	enum tfs_err e;
	char buf[256];
	size_t n;

	if (!endpoint) {
		snprintf(buf, sizeof(buf), "https://s3.%s.amazonaws.com",
			 c->region ? c->region : "us-east-1");
		*ok &= set_str(&c->endpoint, buf);
		return TFS_E_OK;
	}
	if ((e = check_endpoint(endpoint, d)))
		return e;
	*ok &= set_str(&c->endpoint, endpoint);
	n = c->endpoint ? strlen(c->endpoint) : 0;
	while (n > 0 && c->endpoint[n - 1] == '/')
		c->endpoint[--n] = '\0';
	return TFS_E_OK;
}

static enum tfs_err set_addressing(struct tfs_s3_config *c,
				   const char *addressing, bool custom_endpoint,
				   struct tfs_diag *d)
{
	if (!addressing || !strcmp(addressing, "auto"))
		c->path_style = custom_endpoint;
	else if (!strcmp(addressing, "path"))
		c->path_style = true;
	else if (!strcmp(addressing, "virtual"))
		c->path_style = false;
	else
		return tfs_fail(d, TFS_E_INVALID,
				"s3: addressing style '%s' is not path or virtual",
				addressing);
	return TFS_E_OK;
}

enum tfs_err tfs_s3_config_load_env(struct tfs_s3_config *c,
				    const struct tfs_s3_opts *o,
				    tfs_s3_env_fn env, void *ctx,
				    struct tfs_diag *d)
{
	struct tfs_s3_opts none = {NULL, NULL, NULL, -1, NULL, NULL};
	struct profile_vals cred = {0}, conf = {0};
	const char *endpoint;
	enum tfs_err e;
	bool ok;

	set_defaults(c);
	if (!o)
		o = &none;
	if ((e = read_profiles(o, env, ctx, &cred, &conf, d)))
		goto out_free;
	ok = pick_credentials(c, o, env, ctx, &cred, &conf);
	ok &= set_str(&c->region, pick_region(o, env, ctx, &conf));
	endpoint = pick_endpoint(o, env, ctx, &conf);
	if ((e = set_endpoint(c, endpoint, &ok, d)))
		goto out_free;
	if (!ok) {
		e = tfs_fail(d, TFS_E_NOMEM, "s3: out of memory reading settings");
		goto out_free;
	}
	if ((e = set_addressing(c, o->addressing ? o->addressing : conf.addressing,
				endpoint != NULL, d)))
		goto out_free;
	if (o->verify_tls == 0)
		c->verify_tls = false;
out_free:
	vals_release(&cred);
	vals_release(&conf);
	return e;
}

enum tfs_err tfs_s3_config_load(struct tfs_s3_config *c,
				const struct tfs_s3_opts *o, struct tfs_diag *d)
{
	return tfs_s3_config_load_env(c, o, real_env, NULL, d);
}

void tfs_s3_config_release(struct tfs_s3_config *c)
{
	(void)set_str(&c->endpoint, NULL);
	(void)set_str(&c->region, NULL);
	(void)set_str(&c->access_key, NULL);
	(void)set_str(&c->secret_key, NULL);
	(void)set_str(&c->session_token, NULL);
	memset(c, 0, sizeof(*c));
}

bool tfs_s3_is_uri(const char *s)
{
	return s && !strncmp(s, "s3://", 5);
}

enum tfs_err tfs_s3_uri_parse(const char *uri, char **bucket, char **path,
			      struct tfs_diag *d)
{
	const char *b, *slash;
	size_t blen, plen;
	char *bk, *p;

	*bucket = NULL;
	*path = NULL;
	if (!tfs_s3_is_uri(uri))
		return tfs_fail(d, TFS_E_INVALID, "'%s': not an s3:// URI", uri);
	b = uri + 5;
	slash = strchr(b, '/');
	blen = slash ? (size_t)(slash - b) : strlen(b);
	if (blen == 0 || blen > 63)
		return tfs_fail(d, TFS_E_INVALID,
				"'%s': bucket name must have 1 to 63 characters",
				uri);
	for (size_t i = 0; i < blen; i++) {
		unsigned char ch = (unsigned char)b[i];

		if (ch <= ' ' || ch == '?' || ch == '#' || ch == '\\' ||
		    ch >= 0x7f)
			return tfs_fail(d, TFS_E_INVALID,
					"'%s': bad character in the bucket name",
					uri);
	}
	bk = tfs_strndup(b, blen);
	/* The path: "/" + the rest without doubled or trailing slashes. */
	plen = slash ? strlen(slash) : 0;
	p = tfs_malloc(plen + 2);
	if (!bk || !p) {
		tfs_free(bk);
		tfs_free(p);
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	}
	{
		char *o = p;

		*o++ = '/';
		for (const char *s = slash ? slash : ""; *s; s++) {
			if (*s == '/' && o[-1] == '/')
				continue;
			*o++ = *s;
		}
		while (o > p + 1 && o[-1] == '/')
			o--;
		*o = '\0';
	}
	*bucket = bk;
	*path = p;
	return TFS_E_OK;
}
