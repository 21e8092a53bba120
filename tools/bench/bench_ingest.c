/* tfs-bench-ingest: CSV ingest throughput and memory.
#include "tfs_format.h"
 *
#include "tfs_format.h"
 * Generates a numeric CSV of the requested size (default 1 GiB) for a
#include "tfs_format.h"
 * dense 1-D array: a coordinate column and four attributes (INT64,
#include "tfs_format.h"
 * FLOAT64, INT32, FLOAT32), rows in coordinate order, values from a
#include "tfs_format.h"
 * formula of the row number. Creates a fresh array (ZSTD on every
#include "tfs_format.h"
 * attribute), ingests the file with tfs_ingest_csv and reports MB/s of
#include "tfs_format.h"
 * CSV, the CPU time and the peak RSS of the ingest (measured in a child
#include "tfs_format.h"
 * process, so the generator's memory does not count). Then reads a sample of cells back
#include "tfs_format.h"
 * through tfs_query and compares them with the formula. Everything is
#include "tfs_format.h"
 * made in a fresh folder under --dir (default /tmp) and removed at the
#include "tfs_format.h"
 * end unless --keep. */
#include "tfs_format.h"
#include <errno.h>
#include "tfs_format.h"
#include <getopt.h>
#include "tfs_format.h"
#include <inttypes.h>
#include "tfs_format.h"
#include <stdio.h>
#include "tfs_format.h"
#include <stdlib.h>
#include "tfs_format.h"
#include <string.h>
#include "tfs_format.h"
#include <sys/resource.h>
#include "tfs_format.h"
#include <sys/stat.h>
#include "tfs_format.h"
#include <sys/wait.h>
#include "tfs_format.h"
#include <time.h>
#include "tfs_format.h"
#include <unistd.h>
#include "tfs_format.h"

#include "tfs_format.h"
#include <tilefs/tilefs.h>
#include "tfs_format.h"

#include "tfs_format.h"
static const char schema_json[] =
#include "tfs_format.h"
	"{\"array_type\":\"dense\",\"dims\":[{\"name\":\"d\",\"type\":\"INT64\","
#include "tfs_format.h"
	"\"domain\":[0,%" PRIu64 "],\"tile\":100000}],\"attrs\":["
#include "tfs_format.h"
	"{\"name\":\"a\",\"type\":\"INT64\",\"filters\":[\"ZSTD(level=1)\"]},"
#include "tfs_format.h"
	"{\"name\":\"b\",\"type\":\"FLOAT64\",\"filters\":[\"ZSTD(level=1)\"]},"
#include "tfs_format.h"
	"{\"name\":\"c\",\"type\":\"INT32\",\"filters\":[\"ZSTD(level=1)\"]},"
#include "tfs_format.h"
	"{\"name\":\"e\",\"type\":\"FLOAT32\",\"filters\":[\"ZSTD(level=1)\"]}]}";
#include "tfs_format.h"

#include "tfs_format.h"
static double now_s(void)
#include "tfs_format.h"
{
#include "tfs_format.h"
	struct timespec ts;
#include "tfs_format.h"

#include "tfs_format.h"
	clock_gettime(CLOCK_MONOTONIC, &ts);
#include "tfs_format.h"
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
static uint64_t mix(uint64_t r)
#include "tfs_format.h"
{
#include "tfs_format.h"
	r ^= r >> 33;
#include "tfs_format.h"
	r *= UINT64_C(0xff51afd7ed558ccd);
#include "tfs_format.h"
	r ^= r >> 33;
#include "tfs_format.h"
	return r;
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
/* The values of row r. */
#include "tfs_format.h"
static int64_t val_a(uint64_t r) { return (int64_t)(mix(r) % 2000000001) - 1000000000; }
#include "tfs_format.h"
static double val_b(uint64_t r) { return (double)(mix(r + 1) % 100000000) / 100.0; }
#include "tfs_format.h"
static int32_t val_c(uint64_t r) { return (int32_t)(mix(r + 2) % 20001) - 10000; }
#include "tfs_format.h"
static float val_e(uint64_t r) { return (float)(mix(r + 3) % 10000) / 8.0f; }
#include "tfs_format.h"

#include "tfs_format.h"
/* Writes rows until the file reaches size bytes; returns the row count. */
#include "tfs_format.h"
static uint64_t generate(const char *path, uint64_t size)
#include "tfs_format.h"
{
#include "tfs_format.h"
	FILE *f = fopen(path, "w");
#include "tfs_format.h"
	static char buf[1 << 20];
#include "tfs_format.h"
	uint64_t rows = 0, bytes = 0;
#include "tfs_format.h"

#include "tfs_format.h"
	if (!f) {
#include "tfs_format.h"
		perror(path);
#include "tfs_format.h"
		exit(1);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	setvbuf(f, buf, _IOFBF, sizeof(buf));
#include "tfs_format.h"
	bytes += (uint64_t)fprintf(f, "d,a,b,c,e\n");
#include "tfs_format.h"
	while (bytes < size) {
#include "tfs_format.h"
		bytes += (uint64_t)fprintf(f, "%" PRIu64 ",%" PRId64 ",%.2f,%" PRId32 ",%.9g\n",
#include "tfs_format.h"
					   rows, val_a(rows), val_b(rows), val_c(rows),
#include "tfs_format.h"
					   (double)val_e(rows));
#include "tfs_format.h"
		rows++;
#include "tfs_format.h"
	}
#include "tfs_format.h"
	if (fclose(f)) {
#include "tfs_format.h"
		perror(path);
#include "tfs_format.h"
		exit(1);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	return rows;
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
static void on_progress(const struct tfs_ingest_progress *p, void *arg)
#include "tfs_format.h"
{
#include "tfs_format.h"
	double *next = arg;
#include "tfs_format.h"
	double t = now_s();
#include "tfs_format.h"

#include "tfs_format.h"
	if (!isatty(2) || t < *next)
#include "tfs_format.h"
		return;
#include "tfs_format.h"
	*next = t + 0.5;
#include "tfs_format.h"
	fprintf(stderr, "\r  %5.1f%%  %" PRIu64 " rows",
#include "tfs_format.h"
		p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 0.0,
#include "tfs_format.h"
		p->rows);
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
struct measured {
#include "tfs_format.h"
	double seconds;
#include "tfs_format.h"
	double cpu; /* user + system of the ingesting process */
#include "tfs_format.h"
	long maxrss_kb;
#include "tfs_format.h"
	int status;
#include "tfs_format.h"
};
#include "tfs_format.h"

#include "tfs_format.h"
/* Ingests in a child process: its ru_maxrss is the ingest's alone. */
#include "tfs_format.h"
static struct measured run_ingest(const char *array, const char *csv, unsigned threads,
#include "tfs_format.h"
				  uint64_t memory)
#include "tfs_format.h"
{
#include "tfs_format.h"
	struct measured m = {0};
#include "tfs_format.h"
	int fds[2];
#include "tfs_format.h"
	pid_t pid;
#include "tfs_format.h"
	struct rusage ru;
#include "tfs_format.h"

#include "tfs_format.h"
	if (pipe(fds)) {
#include "tfs_format.h"
		perror("pipe");
#include "tfs_format.h"
		exit(1);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	pid = fork();
#include "tfs_format.h"
	if (pid < 0) {
#include "tfs_format.h"
		perror("fork");
#include "tfs_format.h"
		exit(1);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	if (pid == 0) {
#include "tfs_format.h"
		struct tfs_ingest_opts o = {.display_name = "bench.csv"};
#include "tfs_format.h"
		struct tfs_ingest_result r;
#include "tfs_format.h"
		struct tfs_diag d;
#include "tfs_format.h"
		double next = 0, t0, t;
#include "tfs_format.h"
		enum tfs_err e;
#include "tfs_format.h"

#include "tfs_format.h"
		close(fds[0]);
#include "tfs_format.h"
		o.write.threads = threads;
#include "tfs_format.h"
		o.write.memory = memory;
#include "tfs_format.h"
		o.progress = on_progress;
#include "tfs_format.h"
		o.progress_arg = &next;
#include "tfs_format.h"
		tfs_diag_init(&d);
#include "tfs_format.h"
		t0 = now_s();
#include "tfs_format.h"
		e = tfs_ingest_csv(array, csv, &o, &r, &d);
#include "tfs_format.h"
		t = now_s() - t0;
#include "tfs_format.h"
		if (isatty(2))
#include "tfs_format.h"
			fprintf(stderr, "\r%40s\r", "");
#include "tfs_format.h"
		if (e) {
#include "tfs_format.h"
			fprintf(stderr, "ingest failed: %s\n", tfs_diag_msg(&d));
#include "tfs_format.h"
			_exit(2);
#include "tfs_format.h"
		}
#include "tfs_format.h"
		if (write(fds[1], &t, sizeof(t)) != sizeof(t))
#include "tfs_format.h"
			_exit(3);
#include "tfs_format.h"
		_exit(0);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	close(fds[1]);
#include "tfs_format.h"
	if (read(fds[0], &m.seconds, sizeof(m.seconds)) != sizeof(m.seconds))
#include "tfs_format.h"
		m.seconds = -1;
#include "tfs_format.h"
	close(fds[0]);
#include "tfs_format.h"
	if (wait4(pid, &m.status, 0, &ru) < 0) {
#include "tfs_format.h"
		perror("wait4");
#include "tfs_format.h"
		exit(1);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	m.maxrss_kb = ru.ru_maxrss;
#include "tfs_format.h"
	m.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
#include "tfs_format.h"
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
#include "tfs_format.h"
	return m;
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
/* Reads cells [lo, lo + n) and compares them with the formula. */
#include "tfs_format.h"
static uint64_t verify(const char *array, uint64_t rows, unsigned samples)
#include "tfs_format.h"
{
#include "tfs_format.h"
	struct tfs_array *a;
#include "tfs_format.h"
	struct tfs_diag d;
#include "tfs_format.h"
	uint64_t checked = 0;
#include "tfs_format.h"

#include "tfs_format.h"
	tfs_diag_init(&d);
#include "tfs_format.h"
	if (tfs_array_open(array, NULL, &a, &d)) {
#include "tfs_format.h"
		fprintf(stderr, "open: %s\n", tfs_diag_msg(&d));
#include "tfs_format.h"
		exit(1);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	for (unsigned s = 0; s < samples; s++) {
#include "tfs_format.h"
		int64_t lo = (int64_t)(mix(s + 77) % rows), hi;
#include "tfs_format.h"
		struct tfs_range r;
#include "tfs_format.h"
		struct tfs_query_opts qo = {.subarray = &r};
#include "tfs_format.h"
		struct tfs_query *q;
#include "tfs_format.h"
		const struct tfs_batch *b;
#include "tfs_format.h"

#include "tfs_format.h"
		if (s == 0)
#include "tfs_format.h"
			lo = 0;
#include "tfs_format.h"
		if (s == 1)
#include "tfs_format.h"
			lo = (int64_t)rows - 1;
#include "tfs_format.h"
		hi = lo + 999 < (int64_t)rows ? lo + 999 : (int64_t)rows - 1;
#include "tfs_format.h"
		r = (struct tfs_range){.lo = (const uint8_t *)&lo, .hi = (const uint8_t *)&hi,
#include "tfs_format.h"
				       .lo_len = 8, .hi_len = 8};
#include "tfs_format.h"
		if (tfs_query_open(a, &qo, &q, &d)) {
#include "tfs_format.h"
			fprintf(stderr, "query: %s\n", tfs_diag_msg(&d));
#include "tfs_format.h"
			exit(1);
#include "tfs_format.h"
		}
#include "tfs_format.h"
		for (;;) {
#include "tfs_format.h"
			if (tfs_query_next(q, &b, &d)) {
#include "tfs_format.h"
				fprintf(stderr, "query: %s\n", tfs_diag_msg(&d));
#include "tfs_format.h"
				exit(1);
#include "tfs_format.h"
			}
#include "tfs_format.h"
			if (!b)
#include "tfs_format.h"
				break;
#include "tfs_format.h"
			for (uint64_t i = 0; i < b->cell_num; i++, checked++) {
#include "tfs_format.h"
				int64_t dv, av;
#include "tfs_format.h"
				double bv;
#include "tfs_format.h"
				int32_t cv;
#include "tfs_format.h"
				float ev;
#include "tfs_format.h"

#include "tfs_format.h"
				memcpy(&dv, b->columns[0].data + 8 * i, 8);
#include "tfs_format.h"
				memcpy(&av, b->columns[1].data + 8 * i, 8);
#include "tfs_format.h"
				memcpy(&bv, b->columns[2].data + 8 * i, 8);
#include "tfs_format.h"
				memcpy(&cv, b->columns[3].data + 4 * i, 4);
#include "tfs_format.h"
				memcpy(&ev, b->columns[4].data + 4 * i, 4);
#include "tfs_format.h"
				uint64_t row = (uint64_t)dv;
#include "tfs_format.h"

#include "tfs_format.h"
				if (av != val_a(row) || bv != val_b(row) || cv != val_c(row) ||
#include "tfs_format.h"
				    ev != val_e(row)) {
#include "tfs_format.h"
					fprintf(stderr, "cell %" PRIu64 " differs\n", row);
#include "tfs_format.h"
					exit(1);
#include "tfs_format.h"
				}
#include "tfs_format.h"
			}
#include "tfs_format.h"
		}
#include "tfs_format.h"
		tfs_query_close(q);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	tfs_array_close(a);
#include "tfs_format.h"
	return checked;
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
static void usage(void)
#include "tfs_format.h"
{
#include "tfs_format.h"
	fprintf(stderr,
#include "tfs_format.h"
		"usage: tfs-bench-ingest [--size MB] [--dir DIR] [--threads N]\n"
#include "tfs_format.h"
		"                        [--memory MB] [--keep]\n");
#include "tfs_format.h"
	exit(2);
#include "tfs_format.h"
}
#include "tfs_format.h"

#include "tfs_format.h"
int main(int argc, char **argv)
#include "tfs_format.h"
{
#include "tfs_format.h"
	static const struct option longopts[] = {
#include "tfs_format.h"
		{"size", required_argument, NULL, 's'},
#include "tfs_format.h"
		{"dir", required_argument, NULL, 'd'},
#include "tfs_format.h"
		{"threads", required_argument, NULL, 't'},
#include "tfs_format.h"
		{"memory", required_argument, NULL, 'm'},
#include "tfs_format.h"
		{"keep", no_argument, NULL, 'k'},
#include "tfs_format.h"
		{NULL, 0, NULL, 0},
#include "tfs_format.h"
	};
#include "tfs_format.h"
	uint64_t size_mb = 1024, memory_mb = 0;
#include "tfs_format.h"
	const char *dir = "/tmp";
#include "tfs_format.h"
	unsigned threads = 0;
#include "tfs_format.h"
	bool keep = false;
#include "tfs_format.h"
	int c;
#include "tfs_format.h"

#include "tfs_format.h"
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
#include "tfs_format.h"
		switch (c) {
#include "tfs_format.h"
		case 's': size_mb = strtoull(optarg, NULL, 10); break;
#include "tfs_format.h"
		case 'd': dir = optarg; break;
#include "tfs_format.h"
		case 't': threads = (unsigned)strtoul(optarg, NULL, 10); break;
#include "tfs_format.h"
		case 'm': memory_mb = strtoull(optarg, NULL, 10); break;
#include "tfs_format.h"
		case 'k': keep = true; break;
#include "tfs_format.h"
		default: usage();
#include "tfs_format.h"
		}
#include "tfs_format.h"
	}
#include "tfs_format.h"
	if (optind != argc || size_mb == 0)
#include "tfs_format.h"
		usage();
#include "tfs_format.h"

#include "tfs_format.h"
	char root[4096], csv[4200], array[4200], json[1024], cmd[4300];
#include "tfs_format.h"
	struct tfs_schema s;
#include "tfs_format.h"
	struct tfs_diag d;
#include "tfs_format.h"
	struct stat st;
#include "tfs_format.h"
	double t0;
#include "tfs_format.h"

#include "tfs_format.h"
	if (!tfs_temp_template(root, sizeof(root), dir, "tfs-bench-ingest-") ||
#include "tfs_format.h"
	    !mkdtemp(root)) {
#include "tfs_format.h"
		perror(root);
#include "tfs_format.h"
		return 1;
#include "tfs_format.h"
	}
#include "tfs_format.h"
	snprintf(csv, sizeof(csv), "%s/bench.csv", root);
#include "tfs_format.h"
	snprintf(array, sizeof(array), "%s/array", root);
#include "tfs_format.h"
	t0 = now_s();
#include "tfs_format.h"
	uint64_t rows = generate(csv, size_mb << 20);
#include "tfs_format.h"

#include "tfs_format.h"
	if (stat(csv, &st)) {
#include "tfs_format.h"
		perror(csv);
#include "tfs_format.h"
		return 1;
#include "tfs_format.h"
	}
#include "tfs_format.h"
	printf("generated %s: %.1f MB, %" PRIu64 " rows in %.1f s\n", csv,
#include "tfs_format.h"
	       (double)st.st_size / 1e6, rows, now_s() - t0);
#include "tfs_format.h"
	snprintf(json, sizeof(json), schema_json, rows - 1);
#include "tfs_format.h"
	tfs_diag_init(&d);
#include "tfs_format.h"
	if (tfs_schema_from_json(&s, json, strlen(json), &d) ||
#include "tfs_format.h"
	    tfs_array_create(array, &s, NULL, &d)) {
#include "tfs_format.h"
		fprintf(stderr, "create: %s\n", tfs_diag_msg(&d));
#include "tfs_format.h"
		return 1;
#include "tfs_format.h"
	}
#include "tfs_format.h"
	tfs_schema_release(&s);
#include "tfs_format.h"
	/* A warm page cache: the figure is parsing and writing, not disk. */
#include "tfs_format.h"
	snprintf(cmd, sizeof(cmd), "cat '%s' > /dev/null", csv);
#include "tfs_format.h"
	if (system(cmd) != 0)
#include "tfs_format.h"
		fprintf(stderr, "warning: could not pre-read the CSV\n");
#include "tfs_format.h"

#include "tfs_format.h"
	struct measured m = run_ingest(array, csv, threads, memory_mb << 20);
#include "tfs_format.h"

#include "tfs_format.h"
	if (!WIFEXITED(m.status) || WEXITSTATUS(m.status) != 0 || m.seconds <= 0) {
#include "tfs_format.h"
		fprintf(stderr, "ingest failed\n");
#include "tfs_format.h"
		return 1;
#include "tfs_format.h"
	}
#include "tfs_format.h"
	printf("ingest: %.2f s, %.1f MB/s of CSV, %.2f M rows/s, peak RSS %.1f MiB\n",
#include "tfs_format.h"
	       m.seconds, (double)st.st_size / 1e6 / m.seconds,
#include "tfs_format.h"
	       (double)rows / 1e6 / m.seconds, (double)m.maxrss_kb / 1024.0);
#include "tfs_format.h"
	/* CPU time says what the work costs when other processes share the
#include "tfs_format.h"
	 * CPUs and stretch the wall time. */
#include "tfs_format.h"
	printf("CPU: %.2f s (%.0f%% of one core), %.1f MB of CSV per CPU second\n", m.cpu,
#include "tfs_format.h"
	       100.0 * m.cpu / m.seconds, (double)st.st_size / 1e6 / m.cpu);
#include "tfs_format.h"
	uint64_t checked = verify(array, rows, 64);
#include "tfs_format.h"

#include "tfs_format.h"
	printf("verified %" PRIu64 " cells read back\n", checked);
#include "tfs_format.h"
	if (!keep) {
#include "tfs_format.h"
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
#include "tfs_format.h"
		if (system(cmd) != 0)
#include "tfs_format.h"
			fprintf(stderr, "warning: could not remove %s\n", root);
#include "tfs_format.h"
	} else {
#include "tfs_format.h"
		printf("kept %s\n", root);
#include "tfs_format.h"
	}
#include "tfs_format.h"
	return 0;
#include "tfs_format.h"
}
#include "tfs_format.h"
