{
  "targets": [{
    "target_name": "crc32",
    "sources": ["src/crc32.c"],
    "cflags": ["-O3", "-std=c11", "-Wall", "-Wextra"]
  }]
}
