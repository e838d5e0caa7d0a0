/**
 * The JupyterLab renderer: a Lumino widget that hands the MIME payload to `renderReport`.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

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
    renderReport(this.node, model.data[this.mimeType], (anchor, path) => this.link(anchor, path));
    return Promise.resolve();
  }

  /**
   * A file the run wrote, relative to the notebook's folder: resolved against the notebook as
   * JupyterLab's own HTML renderer resolves links, so a click opens it (or its folder) in Lab.
   */
  private link(anchor: HTMLAnchorElement, path: string): void {
    const { resolver, linkHandler } = this;
    if (!resolver) {
      return;
    }
    void resolver
      .resolveUrl(path)
      .then(resolved => {
        linkHandler?.handleLink(anchor, decodeURIComponent(resolved), '');
        return resolver.getDownloadUrl(resolved);
      })
      .then(url => {
        anchor.href = url;
      })
      .catch(() => undefined);
  }
}
