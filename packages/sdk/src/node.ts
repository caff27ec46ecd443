// The Node entry's client: the browser-safe ArchiveClient (client.ts) plus the download helper,
// which writes to disk and checks the ZIP with yauzl, so it stays out of browser bundles.
import { ArchiveClient as FetchArchiveClient, type ZipEntry } from './client';
import { downloadZip, type DownloadOptions, type DownloadResult } from './download';

export class ArchiveClient extends FetchArchiveClient {
  /** Downloads one ZIP of a job into `options.dir`, resuming a partial file, and verifies it. */
  download(zip: Pick<ZipEntry, 'id' | 'filename' | 'size' | 'download_url'>, options: DownloadOptions): Promise<DownloadResult> {
    return downloadZip(zip, { fetch: this.options.fetch, ...options });
  }
}
