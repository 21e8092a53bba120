/* Error table and first-failure diagnostics. */
#include "tfs_err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const struct {
	int errno_value;
	const char *msg;
} err_table[] = {
#define TFS_ERR_ROW(name, errno_value, msg) {errno_value, msg},
	TFS_ERR_MAP(TFS_ERR_ROW)
#undef TFS_ERR_ROW
};

const char *tfs_strerror(enum tfs_err code)
{
	if ((unsigned)code >= TFS_E__COUNT)
		return "unknown error";
	return err_table[code].msg;
}

int tfs_err_errno(enum tfs_err code)
{
	if ((unsigned)code >= TFS_E__COUNT)
		return EIO;
	return err_table[code].errno_value;
}

void tfs_diag_init(struct tfs_diag *d)
{
	d->code = TFS_E_OK;
	d->msg[0] = '\0';
}

enum tfs_err tfs_vfail(struct tfs_diag *d, enum tfs_err code, const char *fmt,
		       va_list ap)
{
	if (!d || d->code != TFS_E_OK || code == TFS_E_OK)
		return code;
	d->code = code;
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
	return code;
}

enum tfs_err tfs_fail(struct tfs_diag *d, enum tfs_err code, const char *fmt,
		      ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = tfs_vfail(d, code, fmt, ap);
	va_end(ap);
	return code;
}

const char *tfs_diag_msg(const struct tfs_diag *d)
{
	if (d->msg[0])
		return d->msg;
	return tfs_strerror(d->code);
}
