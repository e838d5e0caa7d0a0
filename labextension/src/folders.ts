/**
 * Opening a folder from a report: JupyterLab's link handler opens files, not folders (it asks the
 * document manager for a widget), so a link to the dump folder would do nothing. `plugin.ts`, a
 * frontend plugin of this package, hands over the file browser's "go to path" here; the renderer
 * uses it for folder links. Both entry points are modules of one bundle, so they share this state.
 */

/** Show a folder (a path relative to the server root) in JupyterLab's file browser. */
export type FolderOpener = (path: string) => void;

let opener: FolderOpener | null = null;

export function setFolderOpener(open: FolderOpener | null): void {
  opener = open;
}

export function folderOpener(): FolderOpener | null {
  return opener;
}
