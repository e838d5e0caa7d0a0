/**
 * JupyterLab MIME extension for `application/vnd.npu-jupyter.report+json`: placement and
 * precision reports of npu_jupyter (the payload: docs/report-schema.md).
 *
 * The renderer is `safe`: it shows the payload as data (text nodes and SVG shapes) and never runs
 * anything from it, so it may render outputs of untrusted notebooks.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';

import { MIME_TYPE } from './schema';
import { ReportWidget } from './widget';

export const rendererFactory: IRenderMime.IRendererFactory = {
  safe: true,
  mimeTypes: [MIME_TYPE],
  defaultRank: 0,
  createRenderer: options => new ReportWidget(options.mimeType, options.resolver, options.linkHandler)
};

const extension: IRenderMime.IExtension = {
  id: 'npu-jupyter:report-renderer',
  description: 'Renders npu_jupyter placement and precision reports.',
  rendererFactory,
  rank: 0,
  dataType: 'json'
};

export default extension;
