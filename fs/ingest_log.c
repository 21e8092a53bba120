/* The ingest logs: the recent writes and refusals of each folder, which
 * the mount shows as ingest.log. */
#include "tfsd_write.h"

#include <string.h>
#include <time.h>

#include "tfs_alloc.h"
#include "tfs_buf.h"
#include "tfs_log.h"

#define ILOG_LINES 200
#define ILOG_DIRS 256

struct ilog_dir {
	char *dir;
	struct tfs_buf text; /* lines, each ending in '\n' */
	size_t lines;
	uint64_t used;
};

struct tfsd_ilog {
	pthread_mutex_t lock;
	struct ilog_dir dirs[ILOG_DIRS]; /* protected by lock */
	size_t dir_num;                  /* protected by lock */
	uint64_t tick;                   /* protected by lock */
};

enum tfs_err tfsd_ilog_new(struct tfsd_ilog **out)
{
	struct tfsd_ilog *l = tfs_callocn(1, sizeof(*l));

	*out = l;
	if (!l)
		return TFS_E_NOMEM;
	pthread_mutex_init(&l->lock, NULL);
	return TFS_E_OK;
}

void tfsd_ilog_free(struct tfsd_ilog *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->dir_num; i++) {
		tfs_free(l->dirs[i].dir);
		tfs_buf_release(&l->dirs[i].text);
	}
	pthread_mutex_destroy(&l->lock);
	tfs_free(l);
}

static struct ilog_dir *ilog_find(struct tfsd_ilog *l, const char *dir)
{
	for (size_t i = 0; i < l->dir_num; i++)
		if (strcmp(l->dirs[i].dir, dir) == 0)
			return &l->dirs[i];
	return NULL;
}

void tfsd_ilog_add(struct tfsd_ilog *l, const char *dir, const char *file,
		   bool failed, const char *outcome)
{
	struct timespec ts;
	struct ilog_dir *ld;
	char when[48];
	char *dir_copy;
	/* A newline in a name must not make a line of its own. */
	char esc_file[4 * TFSD_NAME_MAX + 1], esc_outcome[1024];

	clock_gettime(CLOCK_REALTIME, &ts);
	tfsr_format_time(when, sizeof(when),
			 (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000);
	tfs_log(failed ? TFS_LOG_ERROR : TFS_LOG_INFO, "write '/%s%s%s': %s%s",
		dir, *dir ? "/" : "", file, failed ? "refused: " : "", outcome);
	if (!l)
		return;
	tfs_escape_ctrl(esc_file, sizeof(esc_file), file);
	tfs_escape_ctrl(esc_outcome, sizeof(esc_outcome), outcome);
	dir_copy = tfs_strdup(dir);
	if (!dir_copy)
		return;
	pthread_mutex_lock(&l->lock);
	ld = ilog_find(l, dir);
	if (!ld) {
		if (l->dir_num < ILOG_DIRS) {
			ld = &l->dirs[l->dir_num++];
		} else {
			ld = &l->dirs[0];
			for (size_t i = 1; i < l->dir_num; i++)
				if (l->dirs[i].used < ld->used)
					ld = &l->dirs[i];
			tfs_free(ld->dir);
			tfs_buf_release(&ld->text);
		}
		memset(ld, 0, sizeof(*ld));
		ld->dir = dir_copy;
		dir_copy = NULL;
		tfs_buf_init(&ld->text, TFS_BUF_NO_MAX);
	}
	ld->used = ++l->tick;
	if (ld->lines == ILOG_LINES) {
		uint8_t *nl = memchr(ld->text.data, '\n', ld->text.len);
		size_t cut = nl ? (size_t)(nl - ld->text.data) + 1 : ld->text.len;

		memmove(ld->text.data, ld->text.data + cut, ld->text.len - cut);
		ld->text.len -= cut;
		ld->lines--;
	}
	if (tfs_buf_printf(&ld->text, "%s  %s  %s%s\n", when, esc_file,
			   failed ? "refused: " : "ok: ", esc_outcome) == TFS_E_OK)
		ld->lines++;
	pthread_mutex_unlock(&l->lock);
	tfs_free(dir_copy);
}

bool tfsd_ilog_has(struct tfsd_ilog *l, const char *dir)
{
	bool has;

	pthread_mutex_lock(&l->lock);
	has = ilog_find(l, dir) != NULL;
	pthread_mutex_unlock(&l->lock);
	return has;
}

enum tfs_err tfsd_ilog_render(struct tfsd_ilog *l, const char *dir,
			      struct tfs_buf *out)
{
	struct ilog_dir *ld;
	enum tfs_err e = TFS_E_OK;

	pthread_mutex_lock(&l->lock);
	ld = ilog_find(l, dir);
	if (ld)
		e = tfs_buf_append(out, ld->text.data, ld->text.len);
	pthread_mutex_unlock(&l->lock);
	return e;
}
