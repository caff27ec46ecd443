// GitHub's anchor of a Markdown heading: how docs are cited (`docs/<page>.md#<anchor>`).
export const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_ -]/gu, '')
    .replace(/ /g, '-');
