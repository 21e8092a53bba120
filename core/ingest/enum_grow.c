/* Enumerations that grow with a CSV (SPEC §6, format/schema.md §9): a
 * collecting pass over the file (tfs__ingest_run with run->grow) gathers
 * the values each enumeration lacks, in the order first seen
 * (enum_values.c); the array is then evolved as TileDB's schema
 * evolution does it, with a new schema in `__schema/` whose enumerations
 * hold those values after their own, and the file is written against
 * that schema. Should the write fail
 * afterwards, the files the evolution added are removed again, so a
 * refused CSV leaves the array as it was. */
#include "ingest_internal.h"

#include <inttypes.h>
#include <string.h>

#include "tfs_alloc.h"
#include "tilefs/tilefs.h"

/* The enumeration with the values found after its own (owned buffers in
 * out; name and path_name borrowed from g->en). */
static enum tfs_err grown(const struct tfs__enum_growth *g,
			  struct tfs_enumeration *out)
{
	const struct tfs_enumeration *en = g->en;
	uint64_t n = en->value_num + g->num;

	*out = *en;
	out->value_num = n;
	out->data_size = en->data_size + g->data.len;
	out->data = tfs_malloc(out->data_size ? (size_t)out->data_size : 1);
	out->offsets = NULL;
	if (!out->data)
		return TFS_E_NOMEM;
	if (en->data_size)
		memcpy(out->data, en->data, (size_t)en->data_size);
	if (g->data.len)
		memcpy(out->data + en->data_size, g->data.data, g->data.len);
	if (!en->offsets)
		return TFS_E_OK;
	out->offsets = tfs_callocn((size_t)n, sizeof(uint64_t));
	if (!out->offsets) {
		tfs_free(out->data);
		out->data = NULL;
		return TFS_E_NOMEM;
	}
	memcpy(out->offsets, en->offsets, (size_t)en->value_num * sizeof(uint64_t));
	for (uint64_t k = 0; k < g->num; k++) {
		uint64_t o;

		memcpy(&o, g->offsets.data + k * 8, 8);
		out->offsets[en->value_num + k] = en->data_size + o;
	}
	return TFS_E_OK;
}

/* ---- Undoing an evolution ------------------------------------------------ */

struct schema_files {
	struct tfs_vfs *vfs, *own;
	char *sdir, *edir;
	struct tfs_dirlist schemas, enums;
};

static void files_release(struct schema_files *f)
{
	tfs_dirlist_release(&f->schemas);
	tfs_dirlist_release(&f->enums);
	tfs_free(f->sdir);
	tfs_free(f->edir);
	tfs_vfs_free(f->own);
}

/* What `__schema/` and its `__enumerations/` hold now. */
static enum tfs_err files_note(struct schema_files *f, const char *path,
			       struct tfs_vfs *vfs, struct tfs_diag *d)
{
	enum tfs_err e;

	memset(f, 0, sizeof(*f));
	f->vfs = vfs;
	if (!vfs) {
		if ((e = tfs_vfs_default_new(path, &f->own, d)))
			return e;
		f->vfs = f->own;
	}
	f->sdir = tfs_path_join(path, "__schema");
	f->edir = f->sdir ? tfs_path_join(f->sdir, "__enumerations") : NULL;
	if (!f->edir)
		return tfs_fail(d, TFS_E_NOMEM, "out of memory");
	if ((e = tfs_vfs_list_or_empty(f->vfs, f->sdir, &f->schemas, d)))
		return e;
	return tfs_vfs_list_or_empty(f->vfs, f->edir, &f->enums, d);
}

static bool listed(const struct tfs_dirlist *l, const char *name)
{
	for (size_t i = 0; i < l->count; i++)
		if (strcmp(l->names[i], name) == 0)
			return true;
	return false;
}

/* Removes the files of dir that the earlier listing lacks. */
static void remove_new(struct tfs_vfs *vfs, const char *dir,
		       const struct tfs_dirlist *before, bool keep_dirs)
{
	struct tfs_dirlist now = {0};
	struct tfs_diag d;

	tfs_diag_init(&d);
	if (tfs_vfs_list_or_empty(vfs, dir, &now, &d))
		return;
	for (size_t i = 0; i < now.count; i++) {
		char *p;

		if (listed(before, now.names[i]) ||
		    (keep_dirs && strcmp(now.names[i], "__enumerations") == 0))
			continue;
		p = tfs_path_join(dir, now.names[i]);
		if (p)
			(void)tfs_vfs_remove(vfs, p, &d);
		tfs_free(p);
	}
	tfs_dirlist_release(&now);
}

void tfs__enum_grow_undo(struct tfs__enum_grow *eg)
{
	struct schema_files *f = eg->files;

	if (!f)
		return;
	if (eg->evolved) {
		/* The schema first: without it the enumeration files are
		 * unreferenced. */
		remove_new(f->vfs, f->sdir, &f->schemas, true);
		remove_new(f->vfs, f->edir, &f->enums, false);
		if (!f->enums.count) {
			struct tfs_diag d;

			tfs_diag_init(&d);
			(void)tfs_vfs_remove(f->vfs, f->edir, &d);
		}
		eg->evolved = false;
	}
}

void tfs__enum_grow_release(struct tfs__enum_grow *eg)
{
	if (eg->files)
		files_release(eg->files);
	tfs_free(eg->files);
	eg->files = NULL;
}

/* ---- The evolution ------------------------------------------------------- */

/* The schema in force with each grown enumeration extended. */
static enum tfs_err evolve_grown(const char *path, const struct tfs_schema *s,
				 const struct tfs_enumeration *enums,
				 size_t enum_num,
				 const struct tfs__enum_growth *grow,
				 const struct tfs_write_opts *wo,
				 const char *name, struct tfs_diag *d)
{
	struct tfs_schema next = *s;
	struct tfs_enum_ref *refs = tfs_callocn(enum_num ? enum_num : 1, sizeof(*refs));
	struct tfs_enumeration *ext = tfs_callocn(enum_num ? enum_num : 1, sizeof(*ext));
	struct tfs_diag ed;
	bool changed;
	enum tfs_err e = TFS_E_OK;

	if (!refs || !ext) {
		e = tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", name);
		goto out;
	}
	for (size_t i = 0; i < enum_num && !e; i++) {
		refs[i] = s->enums[i];
		refs[i].def = (struct tfs_enumeration *)&enums[i];
		if (!grow[i].num)
			continue;
		if (grown(&grow[i], &ext[i]))
			e = tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", name);
		refs[i].def = &ext[i];
	}
	if (e)
		goto out;
	next.enums = refs;
	next.enum_num = (uint32_t)enum_num;
	tfs_diag_init(&ed);
	if ((e = tfs_array_evolve(path, &next, wo, &changed, &ed)))
		e = tfs_fail(d, e, "%s: %s", name, tfs_diag_msg(&ed));
out:
	for (size_t i = 0; ext && i < enum_num; i++) {
		tfs_free(ext[i].data);
		tfs_free(ext[i].offsets);
	}
	tfs_free(ext);
	tfs_free(refs);
	return e;
}

enum tfs_err tfs__enum_grow(struct tfs__enum_grow *eg, const char *path,
			    const struct tfs__ingest_run *tmpl,
			    const struct tfs_write_opts *wo, struct tfs_diag *d)
{
	struct tfs__ingest_run run = *tmpl;
	struct tfs__enum_growth *grow;
	bool any = false;
	enum tfs_err e;

	eg->evolved = false;
	if (!tmpl->enum_num)
		return TFS_E_OK;
	grow = tfs_callocn(tmpl->enum_num, sizeof(*grow));
	if (!grow)
		return tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", tmpl->display_name);
	for (size_t i = 0; i < tmpl->enum_num; i++)
		tfs__enum_growth_init(&grow[i], &tmpl->enums[i]);
	run.grow = grow;
	run.progress = NULL;
	if ((e = tfs__ingest_run(&run, NULL, d)))
		goto out;
	for (size_t i = 0; i < tmpl->enum_num; i++)
		any = any || grow[i].num;
	if (!any)
		goto out;
	if (!(eg->files = tfs_callocn(1, sizeof(*eg->files)))) {
		e = tfs_fail(d, TFS_E_NOMEM, "%s: out of memory", tmpl->display_name);
		goto out;
	}
	if ((e = files_note(eg->files, path, wo->vfs, d)))
		goto out;
	eg->evolved = true;
	if ((e = evolve_grown(path, tmpl->schema, tmpl->enums, tmpl->enum_num,
			      grow, wo, tmpl->display_name, d)))
		tfs__enum_grow_undo(eg);
	for (size_t i = 0; !e && i < tmpl->enum_num; i++)
		eg->values += grow[i].num;
out:
	for (size_t i = 0; i < tmpl->enum_num; i++)
		tfs__enum_growth_release(&grow[i]);
	tfs_free(grow);
	return e;
}
