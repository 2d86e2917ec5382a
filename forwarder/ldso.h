/* The dynamic loader's configuration, read the way ld.so and ldconfig do. */
#pragma once

/* Called per directory or file; return non-zero to stop the walk. */
typedef int (*vgpu_path_fn)(const char *path, void *ctx);

/* Each directory named in conf (an ld.so.conf), following "include" globs
 * relative to the including file's directory, in file order. */
int vgpu_ldso_conf_dirs(const char *conf, vgpu_path_fn fn, void *ctx);

/* Each library path in the ld.so cache at cache whose file name starts with
 * prefix, in cache order (ldconfig's priority order). */
int vgpu_ldso_cache_paths(const char *cache, const char *prefix, vgpu_path_fn fn, void *ctx);
