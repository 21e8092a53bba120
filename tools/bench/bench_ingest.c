/* tfs-bench-ingest: CSV ingest throughput and memory.
 *
 * Generates a numeric CSV of the requested size (default 1 GiB) for a
 * dense 1-D array: a coordinate column and four attributes (INT64,
 * FLOAT64, INT32, FLOAT32), rows in coordinate order, values from a
 * formula of the row number. Creates a fresh array (ZSTD on every
 * attribute), ingests the file with tfs_ingest_csv and reports MB/s of
 * CSV, the CPU time and the peak RSS of the ingest (measured in a child
 * process, so the generator's memory does not count). Then reads a sample of cells back
 * through tfs_query and compares them with the formula. Everything is
 * made in a fresh folder under --dir (default /tmp) and removed at the
 * end unless --keep. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <tilefs/tilefs.h>
#include "tfs_format.h"

static const char schema_json[] =
	"{\"array_type\":\"dense\",\"dims\":[{\"name\":\"d\",\"type\":\"INT64\","
	"\"domain\":[0,%" PRIu64 "],\"tile\":100000}],\"attrs\":["
	"{\"name\":\"a\",\"type\":\"INT64\",\"filters\":[\"ZSTD(level=1)\"]},"
	"{\"name\":\"b\",\"type\":\"FLOAT64\",\"filters\":[\"ZSTD(level=1)\"]},"
	"{\"name\":\"c\",\"type\":\"INT32\",\"filters\":[\"ZSTD(level=1)\"]},"
	"{\"name\":\"e\",\"type\":\"FLOAT32\",\"filters\":[\"ZSTD(level=1)\"]}]}";

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static uint64_t mix(uint64_t r)
{
	r ^= r >> 33;
	r *= UINT64_C(0xff51afd7ed558ccd);
	r ^= r >> 33;
	return r;
}

/* The values of row r. */
static int64_t val_a(uint64_t r) { return (int64_t)(mix(r) % 2000000001) - 1000000000; }
static double val_b(uint64_t r) { return (double)(mix(r + 1) % 100000000) / 100.0; }
static int32_t val_c(uint64_t r) { return (int32_t)(mix(r + 2) % 20001) - 10000; }
static float val_e(uint64_t r) { return (float)(mix(r + 3) % 10000) / 8.0f; }

/* Writes rows until the file reaches size bytes; returns the row count. */
static uint64_t generate(const char *path, uint64_t size)
{
	FILE *f = fopen(path, "w");
	static char buf[1 << 20];
	uint64_t rows = 0, bytes = 0;

	if (!f) {
		perror(path);
		exit(1);
	}
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	bytes += (uint64_t)fprintf(f, "d,a,b,c,e\n");
	while (bytes < size) {
		bytes += (uint64_t)fprintf(f, "%" PRIu64 ",%" PRId64 ",%.2f,%" PRId32 ",%.9g\n",
					   rows, val_a(rows), val_b(rows), val_c(rows),
					   (double)val_e(rows));
		rows++;
	}
	if (fclose(f)) {
		perror(path);
		exit(1);
	}
	return rows;
}

static void on_progress(const struct tfs_ingest_progress *p, void *arg)
{
	double *next = arg;
	double t = now_s();

	if (!isatty(2) || t < *next)
		return;
	*next = t + 0.5;
	fprintf(stderr, "\r  %5.1f%%  %" PRIu64 " rows",
		p->bytes_total ? 100.0 * (double)p->bytes_done / (double)p->bytes_total : 0.0,
		p->rows);
}

struct measured {
	double seconds;
	double cpu; /* user + system of the ingesting process */
	long maxrss_kb;
	int status;
};

/* Ingests in a child process: its ru_maxrss is the ingest's alone. */
static struct measured run_ingest(const char *array, const char *csv, unsigned threads,
				  uint64_t memory)
{
	struct measured m = {0};
	int fds[2];
	pid_t pid;
	struct rusage ru;

	if (pipe(fds)) {
		perror("pipe");
		exit(1);
	}
	pid = fork();
	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		struct tfs_ingest_opts o = {.display_name = "bench.csv"};
		struct tfs_ingest_result r;
		struct tfs_diag d;
		double next = 0, t0, t;
		enum tfs_err e;

		close(fds[0]);
		o.write.threads = threads;
		o.write.memory = memory;
		o.progress = on_progress;
		o.progress_arg = &next;
		tfs_diag_init(&d);
		t0 = now_s();
		e = tfs_ingest_csv(array, csv, &o, &r, &d);
		t = now_s() - t0;
		if (isatty(2))
			fprintf(stderr, "\r%40s\r", "");
		if (e) {
			fprintf(stderr, "ingest failed: %s\n", tfs_diag_msg(&d));
			_exit(2);
		}
		if (write(fds[1], &t, sizeof(t)) != sizeof(t))
			_exit(3);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &m.seconds, sizeof(m.seconds)) != sizeof(m.seconds))
		m.seconds = -1;
	close(fds[0]);
	if (wait4(pid, &m.status, 0, &ru) < 0) {
		perror("wait4");
		exit(1);
	}
	m.maxrss_kb = ru.ru_maxrss;
	m.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
		(double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	return m;
}

/* Reads cells [lo, lo + n) and compares them with the formula. */
static uint64_t verify(const char *array, uint64_t rows, unsigned samples)
{
	struct tfs_array *a;
	struct tfs_diag d;
	uint64_t checked = 0;

	tfs_diag_init(&d);
	if (tfs_array_open(array, NULL, &a, &d)) {
		fprintf(stderr, "open: %s\n", tfs_diag_msg(&d));
		exit(1);
	}
	for (unsigned s = 0; s < samples; s++) {
		int64_t lo = (int64_t)(mix(s + 77) % rows), hi;
		struct tfs_range r;
		struct tfs_query_opts qo = {.subarray = &r};
		struct tfs_query *q;
		const struct tfs_batch *b;

		if (s == 0)
			lo = 0;
		if (s == 1)
			lo = (int64_t)rows - 1;
		hi = lo + 999 < (int64_t)rows ? lo + 999 : (int64_t)rows - 1;
		r = (struct tfs_range){.lo = (const uint8_t *)&lo, .hi = (const uint8_t *)&hi,
				       .lo_len = 8, .hi_len = 8};
		if (tfs_query_open(a, &qo, &q, &d)) {
			fprintf(stderr, "query: %s\n", tfs_diag_msg(&d));
			exit(1);
		}
		for (;;) {
			if (tfs_query_next(q, &b, &d)) {
				fprintf(stderr, "query: %s\n", tfs_diag_msg(&d));
				exit(1);
			}
			if (!b)
				break;
			for (uint64_t i = 0; i < b->cell_num; i++, checked++) {
				int64_t dv, av;
				double bv;
				int32_t cv;
				float ev;

				memcpy(&dv, b->columns[0].data + 8 * i, 8);
				memcpy(&av, b->columns[1].data + 8 * i, 8);
				memcpy(&bv, b->columns[2].data + 8 * i, 8);
				memcpy(&cv, b->columns[3].data + 4 * i, 4);
				memcpy(&ev, b->columns[4].data + 4 * i, 4);
				uint64_t row = (uint64_t)dv;

				if (av != val_a(row) || bv != val_b(row) || cv != val_c(row) ||
				    ev != val_e(row)) {
					fprintf(stderr, "cell %" PRIu64 " differs\n", row);
					exit(1);
				}
			}
		}
		tfs_query_close(q);
	}
	tfs_array_close(a);
	return checked;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tfs-bench-ingest [--size MB] [--dir DIR] [--threads N]\n"
		"                        [--memory MB] [--keep]\n");
	exit(2);
}

struct ingest_args {
	uint64_t size_mb, memory_mb;
	const char *dir;
	unsigned threads;
	bool keep;
};

/* Parses the command line into a; usage() exits on bad input. */
static void parse_args(int argc, char **argv, struct ingest_args *a)
{
	static const struct option longopts[] = {
		{"size", required_argument, NULL, 's'},
		{"dir", required_argument, NULL, 'd'},
		{"threads", required_argument, NULL, 't'},
		{"memory", required_argument, NULL, 'm'},
		{"keep", no_argument, NULL, 'k'},
		{NULL, 0, NULL, 0},
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': a->size_mb = strtoull(optarg, NULL, 10); break;
		case 'd': a->dir = optarg; break;
		case 't': a->threads = (unsigned)strtoul(optarg, NULL, 10); break;
		case 'm': a->memory_mb = strtoull(optarg, NULL, 10); break;
		case 'k': a->keep = true; break;
		default: usage();
		}
	}
	if (optind != argc || a->size_mb == 0)
		usage();
}

/* Creates the array for the generated CSV of `rows` rows. */
static int create_array(const char *array, uint64_t rows)
{
	char json[1024];
	struct tfs_schema s;
	struct tfs_diag d;

	snprintf(json, sizeof(json), schema_json, rows - 1);
	tfs_diag_init(&d);
	if (tfs_schema_from_json(&s, json, strlen(json), &d) ||
	    tfs_array_create(array, &s, NULL, &d)) {
		fprintf(stderr, "create: %s\n", tfs_diag_msg(&d));
		return 1;
	}
	tfs_schema_release(&s);
	return 0;
}

static void report(const struct measured *m, off_t csv_size, uint64_t rows)
{
	printf("ingest: %.2f s, %.1f MB/s of CSV, %.2f M rows/s, peak RSS %.1f MiB\n",
	       m->seconds, (double)csv_size / 1e6 / m->seconds,
	       (double)rows / 1e6 / m->seconds, (double)m->maxrss_kb / 1024.0);
	/* CPU time says what the work costs when other processes share the
	 * CPUs and stretch the wall time. */
	printf("CPU: %.2f s (%.0f%% of one core), %.1f MB of CSV per CPU second\n", m->cpu,
	       100.0 * m->cpu / m->seconds, (double)csv_size / 1e6 / m->cpu);
}

int main(int argc, char **argv)
{
	struct ingest_args a = {1024, 0, "/tmp", 0, false};
	char root[4096], csv[4200], array[4200], cmd[4300];
	struct stat st;
	double t0;

	parse_args(argc, argv, &a);
	if (!tfs_temp_template(root, sizeof(root), a.dir, "tfs-bench-ingest-") ||
	    !mkdtemp(root)) {
		perror(root);
		return 1;
	}
	snprintf(csv, sizeof(csv), "%s/bench.csv", root);
	snprintf(array, sizeof(array), "%s/array", root);
	t0 = now_s();
	uint64_t rows = generate(csv, a.size_mb << 20);

	if (stat(csv, &st)) {
		perror(csv);
		return 1;
	}
	printf("generated %s: %.1f MB, %" PRIu64 " rows in %.1f s\n", csv,
	       (double)st.st_size / 1e6, rows, now_s() - t0);
	if (create_array(array, rows))
		return 1;
	/* A warm page cache: the figure is parsing and writing, not disk. */
	snprintf(cmd, sizeof(cmd), "cat '%s' > /dev/null", csv);
	if (system(cmd) != 0)
		fprintf(stderr, "warning: could not pre-read the CSV\n");

	struct measured m = run_ingest(array, csv, a.threads, a.memory_mb << 20);

	if (!WIFEXITED(m.status) || WEXITSTATUS(m.status) != 0 || m.seconds <= 0) {
		fprintf(stderr, "ingest failed\n");
		return 1;
	}
	report(&m, st.st_size, rows);
	uint64_t checked = verify(array, rows, 64);

	printf("verified %" PRIu64 " cells read back\n", checked);
	if (!a.keep) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
		if (system(cmd) != 0)
			fprintf(stderr, "warning: could not remove %s\n", root);
	} else {
		printf("kept %s\n", root);
	}
	return 0;
}
