/* A main() for the fuzz targets without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on every file named on the command line or
 * found in a folder named there (recursively), so that the regression
 * inputs and the seeds stay fixed in every build, gcc included. A finding
 * aborts (FUZZ_CHECK) or trips a sanitizer; a missing path is an error,
 * an empty folder is not. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

/* Optional in a target. */
__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static unsigned long ran;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long n;

	if (!f) {
		perror(path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET)) {
		perror(path);
		fclose(f);
		return -1;
	}
	/* Copied into a buffer of exactly n bytes so ASan sees overreads. */
	buf = malloc(n ? (size_t)n : 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	if (getenv("FUZZ_REPLAY_VERBOSE"))
		fprintf(stderr, "replay %s\n", path);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	ran++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_path(const char *path)
{
	struct stat st;
	struct dirent *de;
	char **names = NULL;
	size_t count = 0, cap = 0;
	int rc = 0;
	DIR *dir;

	if (stat(path, &st)) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path);
	dir = opendir(path);
	if (!dir) {
		perror(path);
		return -1;
	}
	while ((de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		if (count == cap) {
			char **p;

			cap = cap ? 2 * cap : 64;
			p = realloc(names, cap * sizeof(*names));
			if (!p) {
				rc = -1;
				break;
			}
			names = p;
		}
		names[count] = malloc(strlen(path) + strlen(de->d_name) + 2);
		if (!names[count]) {
			rc = -1;
			break;
		}
		snprintf(names[count], strlen(path) + strlen(de->d_name) + 2,
			 "%s/%s", path, de->d_name);
		count++;
	}
	closedir(dir);
	/* Sorted, so a run is the same run everywhere. */
	if (count)
		qsort(names, count, sizeof(*names), cmp_names);
	for (size_t i = 0; i < count; i++) {
		if (!rc && run_path(names[i]))
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++)
		if (run_path(argv[i]))
			rc = 1;
	printf("%s: %lu inputs replayed\n", argv[0], ran);
	return rc;
}
