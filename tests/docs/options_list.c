/* Prints the daemon's option table (fs/options.c) one option a line,
 * "name<TAB>arg<TAB>default", empty fields for none, so that
 * options_doc.py can compare it with `tilefs --help` and the man page. */
#include <stdio.h>

#include "tfsd.h"

int main(void)
{
	for (const struct tfsd_option *o = tfsd_options; o->name; o++)
		printf("%s\t%s\t%s\n", o->name, o->arg ? o->arg : "",
		       o->def ? o->def : "");
	return ferror(stdout) ? 1 : 0;
}
