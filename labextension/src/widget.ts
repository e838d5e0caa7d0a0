/**
 * The JupyterLab renderer: a Lumino widget that hands the MIME payload to `renderReport`.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { folderOpener } from './folders';
import { MIME_TYPE } from './schema';
import { renderReport } from './view';

export class ReportWidget extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly mimeType: string = MIME_TYPE,
    private readonly resolver: IRenderMime.IResolver | null = null,
    private readonly linkHandler: IRenderMime.ILinkHandler | null = null
  ) {
    super();
    this.addClass('npu-report-widget');
    // JupyterLab's own renderers mark their node with the MIME type they render.
    this.node.dataset.mimeType = mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    renderReport(this.node, model.data[this.mimeType], (anchor, path, folder) => this.link(anchor, path, folder));
    return Promise.resolve();
  }

  /**
   * A file the run wrote, relative to the notebook's folder: resolved against the notebook as
   * JupyterLab's own HTML renderer resolves links, so a click opens it (or its folder) in Lab.
   */
  private link(anchor: HTMLAnchorElement, path: string, folder: boolean): void {
    const { resolver, linkHandler } = this;
    if (!resolver) {
      return;
    }
    void resolver
      .resolveUrl(path)
      .then(resolved => {
        const local = decodeURIComponent(resolved);
        const open = folder ? folderOpener() : null;
        if (open) {
          anchor.addEventListener('click', event => {
            event.preventDefault();
            open(local);
          });
        } else {
          linkHandler?.handleLink(anchor, local, '');
        }
        return resolver.getDownloadUrl(resolved);
      })
      .then(url => {
        anchor.href = url;
      })
      .catch(() => undefined);
  }
}
