/* Helpers shared by the Check test programs (see checkutil.h). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "checkutil.h"

json_object *
cu_get(json_object *o, const char *k)
{
	json_object *v = NULL;

	ck_assert_msg(json_object_object_get_ex(o, k, &v), "no '%s' in %.600s", k,
	    json_object_to_json_string(o));
	return v;
}

int64_t cu_int(json_object *o, const char *k) { return json_object_get_int64(cu_get(o, k)); }
double cu_num(json_object *o, const char *k) { return json_object_get_double(cu_get(o, k)); }
const char *cu_str(json_object *o, const char *k) { return json_object_get_string(cu_get(o, k)); }

json_object *
cu_phase(json_object *doc, size_t i)
{
	return json_object_array_get_idx(cu_get(doc, "phases"), i);
}

int
cu_count_entries(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		char sub[PATH_MAX + 256];

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		n++;
		if (de->d_type == DT_DIR) {
			snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
			n += cu_count_entries(sub);
		}
	}
	closedir(d);
	return n;
}

int
cu_run(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int nf;

	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}

TCase *
cu_tcase(const char *name, void (*setup)(void), void (*teardown)(void), int timeout)
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, timeout);
	return tc;
}
