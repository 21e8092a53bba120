/* Stand-ins for functions of the core's write API (tfs_write.h) that this
 * tree does not define yet (core/write and core/ingest grow function by
 * function): such a write is refused with a message saying so, and the
 * daemon still builds and serves reads. CMake defines TFSD_NO_<function>
 * for each function no core source defines. */
#include <tilefs/tilefs.h>

#define UNBUILT(d, what) \
	tfs_fail(d, TFS_E_UNSUPPORTED, "%s is not in this build", what)

#ifdef TFSD_NO_tfs_writer_open
enum tfs_err tfs_writer_open(const char *path, const struct tfs_write_opts *opts,
			     enum tfs_write_layout layout,
			     const struct tfs_range *box, struct tfs_writer **out,
			     struct tfs_diag *d)
{
	(void)path, (void)opts, (void)layout, (void)box;
	*out = NULL;
	return UNBUILT(d, "writing fragments");
}
#endif

#ifdef TFSD_NO_tfs_writer_append
enum tfs_err tfs_writer_append(struct tfs_writer *w, const struct tfs_batch *b,
			       const uint64_t *tags, struct tfs_diag *d)
{
	(void)w, (void)b, (void)tags;
	return UNBUILT(d, "writing fragments");
}
#endif

#ifdef TFSD_NO_tfs_writer_commit
enum tfs_err tfs_writer_commit(struct tfs_writer *w,
			       struct tfs_write_result *result,
			       struct tfs_diag *d)
{
	(void)w, (void)result;
	return UNBUILT(d, "writing fragments");
}
#endif

#ifdef TFSD_NO_tfs_writer_free
void tfs_writer_free(struct tfs_writer *w)
{
	(void)w;
}
#endif

#ifdef TFSD_NO_tfs_array_create
enum tfs_err tfs_array_create(const char *path, const struct tfs_schema *schema,
			      const struct tfs_write_opts *opts,
			      struct tfs_diag *d)
{
	(void)path, (void)schema, (void)opts;
	return UNBUILT(d, "creating arrays");
}
#endif

#ifdef TFSD_NO_tfs_array_metadata_write
enum tfs_err tfs_array_metadata_write(const char *path,
				      const struct tfs_meta_kv *entries,
				      size_t count,
				      const struct tfs_write_opts *opts,
				      struct tfs_diag *d)
{
	(void)path, (void)entries, (void)count, (void)opts;
	return UNBUILT(d, "writing metadata");
}
#endif

#ifdef TFSD_NO_tfs_array_cleanup
enum tfs_err tfs_array_cleanup(const char *path, const struct tfs_write_opts *opts,
			       uint64_t grace_ms, unsigned *removed,
			       struct tfs_diag *d)
{
	(void)path, (void)opts, (void)grace_ms, (void)d;
	if (removed)
		*removed = 0;
	return TFS_E_OK;
}
#endif

#ifdef TFSD_NO_tfs_ingest_csv
enum tfs_err tfs_ingest_csv(const char *array_path, const char *csv_path,
			    const struct tfs_ingest_opts *opts,
			    struct tfs_ingest_result *result,
			    struct tfs_diag *d)
{
	(void)array_path, (void)csv_path, (void)opts, (void)result;
	return UNBUILT(d, "CSV ingest");
}
#endif

#ifdef TFSD_NO_tfs_ingest_csv_new
enum tfs_err tfs_ingest_csv_new(const char *array_path, const char *csv_path,
				const struct tfs_ingest_opts *opts,
				struct tfs_ingest_result *result,
				struct tfs_diag *d)
{
	(void)array_path, (void)csv_path, (void)opts, (void)result;
	return UNBUILT(d, "CSV ingest");
}
#endif

#ifdef TFSD_NO_tfs_schema_from_json
enum tfs_err tfs_schema_from_json(struct tfs_schema *out, const char *json,
				  size_t len, struct tfs_diag *d)
{
	(void)out, (void)json, (void)len;
	return UNBUILT(d, "schema JSON");
}
#endif
