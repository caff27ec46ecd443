// The JVM's ZIP readers for test/zip-readers.ts: `java -cp commons-compress.jar ZipRead.java
// <reader> <file>` prints one line per entry, "<sha256> <size> <mtime seconds> <name>", and
// exits non-zero on any error. zis (java.util.zip.ZipInputStream) and commons
// (ZipArchiveInputStream) read the file front to back as a stream, as an upload is read;
// zipfile (java.util.zip.ZipFile) reads its central directory.
import java.io.BufferedInputStream;
import java.io.FileInputStream;
import java.io.InputStream;
import java.security.MessageDigest;
import java.util.Enumeration;
import java.util.HexFormat;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipArchiveInputStream;

public class ZipRead {
  static void print(String name, InputStream body, long mtimeMillis) throws Exception {
    MessageDigest sha = MessageDigest.getInstance("SHA-256");
    byte[] buf = new byte[1 << 16];
    long size = 0;
    for (int n; (n = body.read(buf)) > 0; ) {
      sha.update(buf, 0, n);
      size += n;
    }
    System.out.println(HexFormat.of().formatHex(sha.digest()) + " " + size + " " + (mtimeMillis / 1000) + " " + name);
  }

  public static void main(String[] args) throws Exception {
    String reader = args[0];
    String file = args[1];
    if (reader.equals("zipfile")) {
      try (ZipFile zip = new ZipFile(file)) {
        for (Enumeration<? extends ZipEntry> e = zip.entries(); e.hasMoreElements(); ) {
          ZipEntry entry = e.nextElement();
          try (InputStream body = zip.getInputStream(entry)) {
            print(entry.getName(), body, entry.getTime());
          }
        }
      }
    } else if (reader.equals("zis")) {
      try (ZipInputStream zip = new ZipInputStream(new BufferedInputStream(new FileInputStream(file)))) {
        for (ZipEntry entry; (entry = zip.getNextEntry()) != null; ) print(entry.getName(), zip, entry.getTime());
      }
    } else if (reader.equals("commons")) {
      // As its users construct it: a STORED entry with a data descriptor is refused.
      try (ZipArchiveInputStream zip = new ZipArchiveInputStream(new BufferedInputStream(new FileInputStream(file)))) {
        for (ZipArchiveEntry entry; (entry = zip.getNextZipEntry()) != null; ) print(entry.getName(), zip, entry.getTime());
      }
    } else throw new IllegalArgumentException(reader);
  }
}
