/**
 * The JupyterLab renderer: a Lumino widget that hands the MIME payload to `renderReport`.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { MIME_TYPE } from './schema';
import { renderReport } from './view';

export class ReportWidget extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly mimeType: string = MIME_TYPE) {
    super();
    this.addClass('npu-report-widget');
    // JupyterLab's own renderers mark their node with the MIME type they render.
    this.node.dataset.mimeType = mimeType;
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    renderReport(this.node, model.data[this.mimeType]);
    return Promise.resolve();
  }
}
