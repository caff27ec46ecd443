// Connections a client keeps busy at the bench origin (bench/lib/origin-server.ts GET /stats):
// sampled while a case runs, so a bench can set ours beside curl's over time.

export interface OriginLoad {
  /** Responses under way at the origin, averaged over the samples. */
  meanOpen: number;
  /** The most at once. */
  peakOpen: number;
  /** Body bytes the origin sent meanwhile. */
  bytes: number;
  /** [seconds, most responses at once since the sample before] every `everyMs`. */
  timeline: Array<[number, number]>;
}

interface Stats {
  bytes: number;
  open: number;
  peakOpen: number;
}

const stats = async (originUrl: string, reset: boolean): Promise<Stats> => (await (await fetch(`${originUrl}/stats${reset ? '?reset' : ''}`)).json()) as Stats;

/** Samples the origin's responses under way every `everyMs` until stopped. */
export async function sampleOrigin(originUrl: string, everyMs = 250): Promise<{ stop(): Promise<OriginLoad> }> {
  const first = await stats(originUrl, true);
  const t0 = performance.now();
  const timeline: Array<[number, number]> = [];
  let sum = 0;
  let n = 0;
  let peak = 0;
  let pending: Promise<void> = Promise.resolve();
  const sample = () => {
    pending = stats(originUrl, true).then((s) => {
      timeline.push([Number(((performance.now() - t0) / 1000).toFixed(2)), s.peakOpen]);
      sum += s.open;
      n++;
      peak = Math.max(peak, s.peakOpen);
    });
  };
  const timer = setInterval(sample, everyMs);
  return {
    async stop() {
      clearInterval(timer);
      await pending;
      const last = await stats(originUrl, false);
      return { meanOpen: n ? sum / n : last.open, peakOpen: Math.max(peak, last.peakOpen), bytes: last.bytes - first.bytes, timeline };
    },
  };
}

/** "mean 7.6, peak 8" and the timeline as a strip of digits (one per sample; '+' for 10 or more). */
export function describeLoad(load: OriginLoad): string {
  const strip = load.timeline.map(([, open]) => (open >= 10 ? '+' : String(open))).join('');
  return `origin connections mean ${load.meanOpen.toFixed(1)}, peak ${load.peakOpen}: ${strip}`;
}
